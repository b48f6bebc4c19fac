// SPDX-License-Identifier: Apache-2.0
/* Two sub-interpreters, each created on its own native thread with Py_NewInterpreter and each
 * blocked in Python code (time.sleep, the GIL released). Every thread also made a thread state
 * of the main interpreter (the one it used to create its sub-interpreter), which it no longer runs. Prints FACTS and READY
 * from the main thread once both threads have reported, then pauses (pause.h). */
#include <Python.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pause.h"

struct report {
    long lwp;
    unsigned long pthread;
    PyThreadState *mainTstate, *subTstate;
    PyInterpreterState* sub;
    long long subId;
};

static PyInterpreterState* mainInterp;
static struct report reports[2];
static int reported;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void* runSub(void* arg) {
    struct report* r = arg;
    PyThreadState* ts = PyThreadState_New(mainInterp);
    PyEval_RestoreThread(ts);
    PyThreadState* sub = Py_NewInterpreter();
    r->lwp = syscall(SYS_gettid);
    r->pthread = (unsigned long)pthread_self();
    r->mainTstate = ts;
    r->subTstate = sub;
    r->sub = PyThreadState_GetInterpreter(sub);
    r->subId = (long long)PyInterpreterState_GetID(r->sub);
    pthread_mutex_lock(&lock);
    ++reported;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    PyRun_SimpleString("import time\n"
                       "def wait_in_sub():\n"
                       "    time.sleep(100000)\n"
                       "wait_in_sub()\n");
    return NULL;
}

int main(void) {
    Py_Initialize();
    PyThreadState* mainTstate = PyThreadState_Get();
    mainInterp = PyThreadState_GetInterpreter(mainTstate);
    /* Kept in this frame, as Py_BEGIN_ALLOW_THREADS keeps it: the main thread still runs its state. */
    PyThreadState* volatile saved = PyEval_SaveThread();
    pthread_t threads[2];
    for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, runSub, &reports[i]);
    pthread_mutex_lock(&lock);
    while (reported < 2) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    usleep(200 * 1000); /* let both reach time.sleep */
    printf("FACTS {\"pid\": %d, \"main_lwp\": %ld, \"main_tstate\": \"%p\", \"main_interp\": \"%p\", \"subs\": [",
           getpid(), (long)syscall(SYS_gettid), (void*)mainTstate, (void*)mainInterp);
    for (int i = 0; i < 2; ++i)
        printf("%s{\"lwp\": %ld, \"pthread\": \"0x%lx\", \"main_tstate\": \"%p\", \"tstate\": \"%p\", \"interp\": \"%p\", \"id\": %lld}",
               i ? ", " : "", reports[i].lwp, reports[i].pthread, (void*)reports[i].mainTstate, (void*)reports[i].subTstate,
               (void*)reports[i].sub, reports[i].subId);
    printf("]}\nREADY\n");
    fflush(stdout);
    pause_until_quit();
    (void)saved;
    return 0;
}
