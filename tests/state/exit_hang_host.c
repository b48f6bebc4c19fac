// SPDX-License-Identifier: Apache-2.0
// A hang at exit, as pybind11 #2215 and torch #38228 hang: a native worker waits for the GIL in
// PyGILState_Ensure while the main thread holds it; the main thread's Py_FinalizeEx marks the
// runtime finalizing, then clears __main__, whose capsule's destructor joins the worker with the
// GIL still held. The worker never gets the GIL; the join never returns.
// Prints FACTS (the main thread's and the worker's LWP) and READY just before Py_FinalizeEx.
#include <Python.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_t worker;
static volatile long worker_lwp;

static void *work(void *arg) {
    (void)arg;
    worker_lwp = syscall(SYS_gettid);
    PyGILState_STATE g = PyGILState_Ensure();  // the main thread holds the GIL
    PyRun_SimpleString("pass");
    PyGILState_Release(g);
    return NULL;
}

// Runs while Py_FinalizeEx clears __main__: the runtime is finalizing and the GIL held.
static void join_worker(PyObject *capsule) {
    (void)capsule;
    pthread_join(worker, NULL);
}

int main(void) {
    Py_InitializeEx(0);
    pthread_create(&worker, NULL, work, NULL);
    while (!worker_lwp) usleep(1000);
    // The GIL stays held (no bytecode runs here to honour the worker's drop request): the worker
    // is in take_gil's wait by the time Py_FinalizeEx marks the runtime finalizing.
    usleep(300 * 1000);
    PyObject *capsule = PyCapsule_New((void *)&worker, "exit_hang_host.joiner", join_worker);
    PyObject_SetAttrString(PyImport_AddModule("__main__"), "joiner", capsule);
    Py_DECREF(capsule);
    printf("FACTS {\"pid\": %d, \"main\": %ld, \"worker\": %ld, \"version\": \"%d.%d\"}\nREADY\n", (int)getpid(),
           (long)syscall(SYS_gettid), worker_lwp, PY_MAJOR_VERSION, PY_MINOR_VERSION);
    fflush(stdout);
    return Py_FinalizeEx() < 0 ? 1 : 0;
}
