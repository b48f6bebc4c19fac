// SPDX-License-Identifier: Apache-2.0
/* A pool of thread states handed between threads, as mod_python keeps one: the main thread makes
 * three states of the main interpreter (PyThreadState_New) and puts them in a pool; two worker
 * threads take a state from the pool for each request, run it (PyEval_RestoreThread for one,
 * PyEval_AcquireThread for the other), release it (PyEval_SaveThread / PyEval_ReleaseThread) and
 * put it back. First round: worker 1 runs a quick request in state 0 and returns it. Second round:
 * worker 2 takes state 0 (so that one state has now run on two threads) and parks in
 * parked_request() (park.h, the GIL released), then worker 1 takes state 1 and spins in
 * busy_request(), holding the GIL. State 2 stays in the pool, never run.
 *
 * Prints FACTS and READY once both requests have told where they run, then pauses (pause.h). */
#include "park.h"

#include <stdio.h>
#include <string.h>

#include "pause.h"

#define POOL 3

static PyThreadState* pool[POOL];
static PyInterpreterState* interp;
static long workerLwp[2], firstLwp, firstPythonLwp;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int round_ = 0;

static const char* kRequests =
    "import threading\n"
    "def quick_request():\n"
    "    return threading.get_native_id()\n"
    "def parked_request():\n"
    "    park(0, threading.get_native_id(), interp_id, 0)  # PARK_RELEASE\n"
    "def busy_request():\n"
    "    park(1, threading.get_native_id(), interp_id, 2)  # PARK_TELL\n"
    "    n = 0\n"
    "    while True:\n"
    "        n += 1\n";

static void waitRound(int r) {
    pthread_mutex_lock(&m);
    while (round_ < r) pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
}

static void nextRound(void) {
    pthread_mutex_lock(&m);
    ++round_;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&m);
}

static void* worker1(void* arg) {
    (void)arg;
    workerLwp[0] = syscall(SYS_gettid);
    waitRound(1);
    PyEval_RestoreThread(pool[0]);
    PyObject* globals = PyModule_GetDict(PyImport_AddModule("__main__"));
    PyObject* lwp = PyObject_CallObject(PyDict_GetItemString(globals, "quick_request"), NULL);
    firstLwp = syscall(SYS_gettid);
    firstPythonLwp = lwp ? PyLong_AsLong(lwp) : -1;
    Py_XDECREF(lwp);
    PyEval_SaveThread();  /* state 0 back to the pool */
    nextRound();          /* round 2: worker 2 takes state 0 */
    waitRound(3);         /* worker 2 parked */
    PyEval_RestoreThread(pool[1]);
    parkCall(globals, "busy_request");
    return NULL;
}

static void* worker2(void* arg) {
    (void)arg;
    workerLwp[1] = syscall(SYS_gettid);
    waitRound(2);
    PyEval_AcquireThread(pool[0]);
    PyObject* globals = PyModule_GetDict(PyImport_AddModule("__main__"));
    nextRound();
    parkCall(globals, "parked_request");
    return NULL;
}

int main(void) {
    parkInit();
    Py_InitializeEx(0);
    PyThreadState* mainTstate = PyThreadState_Get();
    interp = mainTstate->interp;
    parkGlobals(kRequests);
    for (int i = 0; i < POOL; ++i) pool[i] = PyThreadState_New(interp);
    PyEval_SaveThread();
    pthread_t t1, t2;
    pthread_create(&t1, NULL, worker1, NULL);
    pthread_create(&t2, NULL, worker2, NULL);
    nextRound();
    parkWait(2);
    printf("FACTS {\"pid\": %d, \"version\": \"%.*s\", \"main_lwp\": %ld, \"main_tstate\": \"%p\", \"pool\": [\"%p\", \"%p\", \"%p\"], "
           "\"first\": {\"tstate\": \"%p\", \"lwp\": %ld, \"python_lwp\": %ld}, "
           "\"parked\": {\"tstate\": \"%p\", \"lwp\": %ld, \"python_lwp\": %ld, \"function\": \"parked_request\"}, "
           "\"busy\": {\"tstate\": \"%p\", \"lwp\": %ld, \"python_lwp\": %ld, \"function\": \"busy_request\"}}\nREADY\n",
           getpid(), (int)strcspn(Py_GetVersion(), " "), Py_GetVersion(), (long)syscall(SYS_gettid), (void*)mainTstate, (void*)pool[0], (void*)pool[1], (void*)pool[2],
           (void*)pool[0], firstLwp, firstPythonLwp,
           (void*)parkedAt[0].tstate, parkedAt[0].lwp, parkedAt[0].pythonLwp,
           (void*)parkedAt[1].tstate, parkedAt[1].lwp, parkedAt[1].pythonLwp);
    fflush(stdout);
    pause_until_quit();
    return 0;
}
