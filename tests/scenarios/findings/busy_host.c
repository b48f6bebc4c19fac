// SPDX-License-Identifier: Apache-2.0
/* A busy service for scripts/bench-record: THREADS native threads, each for SECONDS taking and
 * giving up the GIL the way a C++ callback into Python does. Every iteration is one
 * PyGILState_Ensure (which makes a fresh thread state: created, cached in PyGILState's key, used)
 * and one PyGILState_Release (which deletes it). Usage: busy_host THREADS SECONDS.
 * Prints "COUNTS {json}" (iterations per thread and in all, wall time) and "READY", then pauses. */
#include <Python.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pause.h"

static double seconds;
static struct timespec start;

static double since(const struct timespec* t0) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* scripts/bench-record breaks here to start recording: after Py_Initialize, before the workers. */
__attribute__((noinline)) void start_workers(void) { __asm__ volatile(""); }

static void* worker(void* arg) {
    long* count = arg;
    while (since(&start) < seconds) {
        PyGILState_STATE gil = PyGILState_Ensure();
        ++*count;
        PyGILState_Release(gil);
    }
    return NULL;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s THREADS SECONDS\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]);
    seconds = atof(argv[2]);
    if (n < 1 || n > 10000 || seconds <= 0) return 2;
    Py_Initialize();
    PyEval_SaveThread();
    pthread_t* threads = calloc((size_t)n, sizeof *threads);
    long* counts = calloc((size_t)n, sizeof *counts);
    start_workers();
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < n; ++i) pthread_create(&threads[i], NULL, worker, &counts[i]);
    long total = 0;
    for (int i = 0; i < n; ++i) {
        pthread_join(threads[i], NULL);
        total += counts[i];
    }
    printf("COUNTS {\"threads\": %d, \"iterations\": %ld, \"seconds\": %.3f}\n", n, total, since(&start));
    printf("FACTS {\"pid\": %d}\nREADY\n", getpid());
    fflush(stdout);
    pause_until_quit();
    return 0;
}
