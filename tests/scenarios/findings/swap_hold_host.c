// SPDX-License-Identifier: Apache-2.0
/* A swap without release, the seed's svr 2.0 coroutine pattern: a worker takes the GIL with
 * PyGILState_Ensure (its state W, kept in PyGILState's slot), makes a coroutine's thread state D2
 * with PyThreadState_New and swaps it in with PyThreadState_Swap while it holds the GIL (up to
 * 3.11 the swap keeps the GIL, so the GIL's last_holder stays W; 3.12+ releases it and takes it
 * again for D2). The coroutine runs Python, coroutine_body(), which parks in a C call that keeps the
 * GIL (park.h). CPython's current thread state on the worker is then D2; PyGILState's is W up to
 * 3.11, D2 from 3.12 (activating a state binds PyGILState's slot to it).
 *
 * The main thread released the GIL after Py_Initialize and waits in pause_until_quit. Prints
 * FACTS and READY once the coroutine has told where it runs, then pauses (pause.h). */
#include "park.h"

#include <stdio.h>
#include <string.h>

#include "pause.h"

static PyThreadState *w, *d2;
static long workerLwp;

static const char* kCoroutine =
    "import threading\n"
    "def coroutine_body():\n"
    "    park(0, threading.get_native_id(), interp_id, 1)  # PARK_HOLD\n";

static void* worker(void* arg) {
    (void)arg;
    workerLwp = syscall(SYS_gettid);
    PyGILState_STATE g = PyGILState_Ensure();
    (void)g;
    w = PyThreadState_Get();
    /* Defined first, in W: its imports release the GIL for their reads and take it again, which
     * would make D2 the GIL's last_holder if run after the swap. */
    PyObject* globals = parkGlobals(kCoroutine);
    d2 = PyThreadState_New(w->interp);
    PyThreadState_Swap(d2);  /* the GIL kept: no PyEval_SaveThread */
    parkCall(globals, "coroutine_body");
    return NULL;
}

int main(void) {
    parkInit();
    Py_InitializeEx(0);
    PyThreadState* mainTstate = PyThreadState_Get();
    PyEval_SaveThread();
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    parkWait(1);
    printf("FACTS {\"pid\": %d, \"version\": \"%.*s\", \"main_lwp\": %ld, \"main_tstate\": \"%p\", \"worker_lwp\": %ld, "
           "\"w\": \"%p\", \"d2\": \"%p\", \"python_lwp\": %ld, \"interp_id\": %ld, \"running\": \"%p\", \"gilstate\": \"%p\", \"function\": \"coroutine_body\"}\nREADY\n",
           getpid(), (int)strcspn(Py_GetVersion(), " "), Py_GetVersion(), (long)syscall(SYS_gettid), (void*)mainTstate, workerLwp, (void*)w, (void*)d2,
           parkedAt[0].pythonLwp, parkedAt[0].interpId, (void*)parkedAt[0].tstate, (void*)parkedAt[0].gilstate);
    fflush(stdout);
    pause_until_quit();
    return 0;
}
