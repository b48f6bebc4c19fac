// SPDX-License-Identifier: Apache-2.0
/* libpython 3.12+ loaded with dlopen gets dynamic TLS: each thread's _Py_tss_tstate lives in a
 * block its DTV points to, allocated on the thread's first use. Thread A takes the GIL with
 * PyGILState_Ensure and blocks holding it (its _Py_tss_tstate names its tstate); thread C is a
 * plain C thread that never touched Python (its block is not allocated); the main thread ran
 * Python and released the GIL (its _Py_tss_tstate is NULL). argv[1]: the libpython to load.
 * Prints FACTS and READY, then pauses (pause.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pause.h"

typedef void (*void_fn)(void);
typedef void* (*ptr_fn)(void);
typedef int (*ensure_fn)(void);
typedef int (*run_fn)(const char*);

static ptr_fn threadStateGet;
static ensure_fn gilEnsure;
static run_fn runString;
static long aLwp, cLwp;
static void* aTstate;
static int ready;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void announce(long* lwp) {
    pthread_mutex_lock(&lock);
    *lwp = syscall(SYS_gettid);
    ++ready;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

static void* holder(void* arg) {
    (void)arg;
    gilEnsure();
    runString("x = [i * i for i in range(100)]\n");
    aTstate = threadStateGet();
    announce(&aLwp);
    for (;;) pause(); /* holds the GIL for good */
    return NULL;
}

static void* plainC(void* arg) {
    (void)arg;
    announce(&cLwp);
    for (;;) pause();
    return NULL;
}

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    ((void_fn)dlsym(h, "Py_Initialize"))();
    threadStateGet = (ptr_fn)dlsym(h, "PyThreadState_Get");
    gilEnsure = (ensure_fn)dlsym(h, "PyGILState_Ensure");
    runString = (run_fn)dlsym(h, "PyRun_SimpleString");
    void* mainTstate = threadStateGet();
    ((ptr_fn)dlsym(h, "PyEval_SaveThread"))();
    pthread_t a, c;
    pthread_create(&c, NULL, plainC, NULL);
    pthread_create(&a, NULL, holder, NULL);
    pthread_mutex_lock(&lock);
    while (ready < 2) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    printf("FACTS {\"pid\": %d, \"main_lwp\": %ld, \"main_tstate\": \"%p\", \"holder_lwp\": %ld, \"holder_tstate\": \"%p\", "
           "\"plain_lwp\": %ld}\nREADY\n",
           getpid(), (long)syscall(SYS_gettid), mainTstate, aLwp, aTstate, cLwp);
    fflush(stdout);
    pause_until_quit();
    return 0;
}
