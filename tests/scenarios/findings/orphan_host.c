// SPDX-License-Identifier: Apache-2.0
/* A native thread that takes a thread state with PyGILState_Ensure, runs Python, releases the
 * GIL with PyEval_SaveThread and ends without PyGILState_Release: its thread state stays in the
 * interpreter's list with no thread behind it (orphan-tstate). Prints FACTS, READY, then pauses
 * without the GIL. */
#include <Python.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pause.h"

static PyThreadState* orphan;
static unsigned long orphanPthread;
static long orphanLwp;

static void* leaver(void* arg) {
    (void)arg;
    PyGILState_Ensure();
    PyRun_SimpleString("x = sum(range(10))\n");
    orphan = PyThreadState_Get();
    orphanPthread = (unsigned long)pthread_self();
    orphanLwp = syscall(SYS_gettid);
    PyEval_SaveThread(); /* the GIL is free again, but the thread state is never released */
    return NULL;
}

int main(void) {
    Py_Initialize();
    PyThreadState* mainTstate = PyThreadState_Get();
    PyThreadState* saved = PyEval_SaveThread();
    pthread_t t;
    pthread_create(&t, NULL, leaver, NULL);
    pthread_join(t, NULL);
    printf("FACTS {\"pid\": %d, \"main_lwp\": %ld, \"main_tstate\": \"%p\", \"orphan_tstate\": \"%p\", "
           "\"orphan_pthread\": \"0x%lx\", \"orphan_lwp\": %ld}\nREADY\n",
           getpid(), (long)syscall(SYS_gettid), (void*)mainTstate, (void*)orphan, orphanPthread, orphanLwp);
    fflush(stdout);
    (void)saved;
    pause_until_quit();
    return 0;
}
