// SPDX-License-Identifier: Apache-2.0
/* A thread state that migrates: thread A makes it (PyThreadState_New), runs Python on it and
 * releases it; thread B then takes the GIL with that same thread state (PyEval_RestoreThread), as
 * a fiber or coroutine resumed on another OS thread does, and blocks in C holding the GIL with it.
 * Prints FACTS (both LWPs, the thread state) and READY from the main thread, then pauses. */
#include <Python.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pause.h"

static PyInterpreterState* interp;
static PyThreadState* migrating;
static long lwpA, lwpB;
static int stage;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void advance(int to) {
    pthread_mutex_lock(&lock);
    stage = to;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

static void waitFor(int at) {
    pthread_mutex_lock(&lock);
    while (stage < at) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
}

static void* threadA(void* arg) {
    (void)arg;
    lwpA = syscall(SYS_gettid);
    migrating = PyThreadState_New(interp);
    PyEval_RestoreThread(migrating);
    PyRun_SimpleString("made_on_a = 1\n");
    PyEval_SaveThread();
    advance(1);
    waitFor(99); /* A lives on: the thread state still names it */
    return NULL;
}

static void* threadB(void* arg) {
    (void)arg;
    waitFor(1);
    lwpB = syscall(SYS_gettid);
    PyEval_RestoreThread(migrating); /* A's thread state, on B */
    PyRun_SimpleString("run_on_b = 1\n");
    advance(2);
    waitFor(99); /* blocks in C holding the GIL with A's thread state */
    return NULL;
}

int main(void) {
    Py_Initialize();
    interp = PyThreadState_GetInterpreter(PyThreadState_Get());
    PyEval_SaveThread();
    pthread_t a, b;
    pthread_create(&a, NULL, threadA, NULL);
    pthread_create(&b, NULL, threadB, NULL);
    waitFor(2);
    printf("FACTS {\"pid\": %d, \"a_lwp\": %ld, \"b_lwp\": %ld, \"tstate\": \"%p\"}\nREADY\n", getpid(), lwpA, lwpB, (void*)migrating);
    fflush(stdout);
    pause_until_quit();
    return 0;
}
