// SPDX-License-Identifier: Apache-2.0
/* CPython aborting with a fatal error: a native thread takes the GIL with PyGILState_Ensure,
 * releases it with PyEval_SaveThread (its thread state is no longer current), then calls
 * PyGILState_Release: "Fatal Python error: PyGILState_Release: thread state ... must be current
 * when releasing", and abort(). Prints FACTS and READY first. */
#include <Python.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static void* releaser(void* arg) {
    (void)arg;
    PyGILState_STATE state = PyGILState_Ensure();
    PyThreadState* mine = PyEval_SaveThread();
    printf("FACTS {\"pid\": %d, \"worker_lwp\": %ld, \"tstate\": \"%p\"}\nREADY\n", getpid(), (long)syscall(SYS_gettid),
           (void*)mine);
    fflush(stdout);
    usleep(200 * 1000);
    PyGILState_Release(state); /* not current: fatal */
    return NULL;
}

int main(void) {
    Py_Initialize();
    PyEval_SaveThread();
    pthread_t t;
    pthread_create(&t, NULL, releaser, NULL);
    pthread_join(t, NULL);
    return 0;
}
