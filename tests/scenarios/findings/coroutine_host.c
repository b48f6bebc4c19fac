// SPDX-License-Identifier: Apache-2.0
/* Coroutines on one thread, each with its own thread state, switched with PyThreadState_Swap as
 * libco-style schedulers do: a worker takes the GIL through PyGILState_Ensure, makes a thread state
 * per coroutine (PyThreadState_New), switches between them SWITCHES times each running Python,
 * switches back to its own, then deletes the finished coroutine's thread state (PyThreadState_Clear,
 * PyThreadState_Delete) and keeps the suspended one. Prints FACTS and READY, then pauses. */
#include <Python.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pause.h"

#define SWITCHES 3

static PyThreadState *own, *suspended, *finished;
static long workerLwp;
static int done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void* worker(void* arg) {
    (void)arg;
    workerLwp = syscall(SYS_gettid);
    PyGILState_STATE gil = PyGILState_Ensure();
    own = PyThreadState_Get();
    PyInterpreterState* interp = PyThreadState_GetInterpreter(own);
    suspended = PyThreadState_New(interp);
    finished = PyThreadState_New(interp);
    for (int i = 0; i < SWITCHES; ++i) {
        PyThreadState_Swap(suspended);
        PyRun_SimpleString("in_coroutine = 'suspended'\n");
        PyThreadState_Swap(finished);
        PyRun_SimpleString("in_coroutine = 'finished'\n");
    }
    PyThreadState_Swap(own);
    PyThreadState_Clear(finished);
    PyThreadState_Delete(finished);
    PyGILState_Release(gil);
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_broadcast(&cond);
    while (done < 2) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void) {
    Py_Initialize();
    PyEval_SaveThread();
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_mutex_lock(&lock);
    while (!done) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    printf("FACTS {\"pid\": %d, \"worker_lwp\": %ld, \"own\": \"%p\", \"suspended\": \"%p\", \"finished\": \"%p\", \"switches\": %d}\nREADY\n",
           getpid(), workerLwp, (void*)own, (void*)suspended, (void*)finished, SWITCHES);
    fflush(stdout);
    pause_until_quit();
    return 0;
}
