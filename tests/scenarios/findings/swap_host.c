// SPDX-License-Identifier: Apache-2.0
/* Thread states run by threads that did not make them, as uWSGI and mod_wsgi do.
 *
 * uWSGI's pattern: the main thread makes two sub-interpreters and, for each, one thread state per
 * worker (PyThreadState_New on the main thread); each worker swaps one of them in
 * (PyEval_RestoreThread) and runs a request in it. Workers 0-2 park in known Python functions
 * (time.sleep: the GIL released); with "uwsgi-busy", worker 3 runs a busy loop holding the GIL.
 * mod_wsgi's pattern: a thread that first took a main-interpreter state with PyGILState_Ensure,
 * released it, then made its own state of sub-interpreter 2 and runs it; with "modwsgi-busy" it
 * holds the GIL in a busy loop there (PyGILState's slot still naming its main-interpreter state),
 * else it parks too. One more state of sub-interpreter 1 is made on the main thread and never run.
 * The main thread itself waits in C (pause_until_quit), running nothing. With "fork-..." the
 * process forks after making the states and the child runs them (uWSGI's master and worker): the
 * states' native_thread_id is the parent's main thread, their thread_id the child's main thread.
 *
 * Every request tells from Python which OS thread runs it (threading.get_native_id()) and in which
 * interpreter (its id, set in the request's globals); the FACTS line repeats
 * it beside the C side's gettid() and the thread state pointers. Prints FACTS, READY, pauses. */
#include <Python.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pause.h"

#define WORKERS 4

static PyInterpreterState* subs[2];
static PyThreadState* workerStates[WORKERS];
static PyThreadState* spareState;
static PyThreadState* modwsgiMain;
static PyThreadState* modwsgiSub;
static long workerLwp[WORKERS], modwsgiLwp, mainLwp;
static long seenLwp[WORKERS + 1];
static long seenInterp[WORKERS + 1];
static int busyWorker = -1, modwsgiBusy = 0;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started = 0;

/* The request: records where it runs (threading.get_native_id, the interpreter's id), tells the
 * C side, then parks or spins in a function named after its slot. */
static const char* kRequest =
    "import threading, time, sys\n"
    "def parked_request_%d(report):\n"
    "    report(threading.get_native_id(), interp_id)\n"
    "    time.sleep(100000)\n"
    "def busy_request_%d(report):\n"
    "    report(threading.get_native_id(), interp_id)\n"
    "    n = 0\n"
    "    while True:\n"
    "        n += 1\n";

static PyObject* report(PyObject* self, PyObject* args) {
    long lwp, interp;
    if (!PyArg_ParseTuple(args, "ll", &lwp, &interp)) return NULL;
    int slot = (int)PyLong_AsLong(self);
    pthread_mutex_lock(&m);
    seenLwp[slot] = lwp;
    seenInterp[slot] = interp;
    ++started;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&m);
    Py_RETURN_NONE;
}

static PyMethodDef reportDef = {"report", report, METH_VARARGS, NULL};

static void runRequest(int slot, int busy) {
    char code[1024];
    snprintf(code, sizeof code, kRequest, slot, slot);
    PyObject* mainModule = PyImport_AddModule("__main__");
    PyObject* globals = PyModule_GetDict(mainModule);
    PyDict_SetItemString(globals, "interp_id", PyLong_FromLongLong((long long)PyInterpreterState_GetID(PyThreadState_Get()->interp)));
    PyObject* done = PyRun_String(code, Py_file_input, globals, globals);
    Py_XDECREF(done);
    PyObject* slotObj = PyLong_FromLong(slot);
    PyObject* reporter = PyCFunction_New(&reportDef, slotObj);
    char name[64];
    snprintf(name, sizeof name, busy ? "busy_request_%d" : "parked_request_%d", slot);
    PyObject* fn = PyDict_GetItemString(globals, name);
    PyObject* result = fn ? PyObject_CallFunctionObjArgs(fn, reporter, NULL) : NULL;
    if (!result) PyErr_Print();
}

static void* worker(void* arg) {
    int i = (int)(long)arg;
    workerLwp[i] = syscall(SYS_gettid);
    PyEval_RestoreThread(workerStates[i]);  /* a state the main thread made */
    runRequest(i, i == busyWorker);
    return NULL;
}

static void* modwsgi(void* arg) {
    (void)arg;
    modwsgiLwp = syscall(SYS_gettid);
    PyGILState_STATE g = PyGILState_Ensure();  /* its main-interpreter state, kept in PyGILState's slot */
    (void)g;
    modwsgiMain = PyThreadState_Get();
    PyEval_SaveThread();
    modwsgiSub = PyThreadState_New(subs[1]);  /* its own state of sub-interpreter 2 */
    PyEval_RestoreThread(modwsgiSub);
    runRequest(WORKERS, modwsgiBusy);
    return NULL;
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "uwsgi-busy";
    int forked = strncmp(mode, "fork-", 5) == 0;  /* as uWSGI: the states are made, then the worker forked */
    if (strcmp(mode + (forked ? 5 : 0), "uwsgi-busy") == 0) busyWorker = WORKERS - 1;
    else modwsgiBusy = 1;
    mainLwp = syscall(SYS_gettid);
    Py_InitializeEx(0);
    PyThreadState* mainState = PyThreadState_Get();
    for (int s = 0; s < 2; ++s) {
        PyThreadState* first = Py_NewInterpreter();
        subs[s] = first->interp;
        PyThreadState_Swap(mainState);
    }
    for (int i = 0; i < WORKERS; ++i) workerStates[i] = PyThreadState_New(subs[i % 2]);
    spareState = PyThreadState_New(subs[0]);
    PyEval_SaveThread();
    long makerLwp = mainLwp;
    if (forked) {
        pid_t child = fork();
        if (child > 0) { /* the parent waits: the child serves, as uWSGI's worker does */
            int status = 0;
            waitpid(child, &status, 0);
            _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        mainLwp = syscall(SYS_gettid);
    }
    /* The busy one last: a loop in one sub-interpreter does not hear another interpreter's
     * thread ask for the GIL on 3.11 (the drop request is per interpreter), so it would starve it. */
    pthread_t threads[WORKERS + 1];
    for (int pass = 0; pass < 2; ++pass) {
        for (int i = 0; i < WORKERS; ++i)
            if ((i == busyWorker) == (pass == 1)) pthread_create(&threads[i], NULL, worker, (void*)(long)i);
        if (modwsgiBusy == (pass == 1)) pthread_create(&threads[WORKERS], NULL, modwsgi, NULL);
        pthread_mutex_lock(&m);
        while (started < (pass == 0 ? WORKERS : WORKERS + 1)) pthread_cond_wait(&cv, &m);
        pthread_mutex_unlock(&m);
    }
    usleep(300 * 1000);  /* the parked ones reach their sleep */
    printf("FACTS {\"pid\": %d, \"forked\": %s, \"maker_lwp\": %ld, \"main_lwp\": %ld, \"main_tstate\": \"%p\", \"spare_tstate\": \"%p\", "
           "\"busy\": \"%s\", \"workers\": [",
           getpid(), forked ? "true" : "false", makerLwp, mainLwp, (void*)mainState, (void*)spareState, mode);
    for (int i = 0; i < WORKERS; ++i)
        printf("%s{\"lwp\": %ld, \"python_lwp\": %ld, \"interp_id\": %ld, \"tstate\": \"%p\", \"function\": \"%s_request_%d\"}",
               i ? ", " : "", workerLwp[i], seenLwp[i], seenInterp[i], (void*)workerStates[i], i == busyWorker ? "busy" : "parked", i);
    printf("], \"modwsgi\": {\"lwp\": %ld, \"python_lwp\": %ld, \"interp_id\": %ld, \"tstate\": \"%p\", \"gilstate_tstate\": \"%p\", "
           "\"function\": \"%s_request_%d\"}}\nREADY\n",
           modwsgiLwp, seenLwp[WORKERS], seenInterp[WORKERS], (void*)modwsgiSub, (void*)modwsgiMain, modwsgiBusy ? "busy" : "parked", WORKERS);
    fflush(stdout);
    pause_until_quit();
    return 0;
}
