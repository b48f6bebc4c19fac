// SPDX-License-Identifier: Apache-2.0
/* Nested sub-interpreter calls on one stack: the main thread runs Python in the main
 * interpreter (its state A: outer_call()), which calls into C, enter_sub(); that swaps to the
 * state B of a sub-interpreter (made with Py_NewInterpreter on this thread), keeping the GIL as
 * an embedder's callback does, and runs Python there (inner_call()), which parks in a C call that
 * keeps the GIL (park.h). One OS thread then runs B innermost and A beneath it: two eval loops,
 * two interpreters. A second thread, made for the purpose, waits for the GIL with its own state
 * of the main interpreter (PyGILState_Ensure).
 *
 * Prints FACTS and READY from a helper thread once inner_call has told where it runs and the
 * waiter is on its way to the GIL, then pauses (pause.h). */
#include "park.h"

#include <stdio.h>
#include <string.h>

#include "pause.h"

static PyThreadState *a, *b;
static long mainLwp, waiterLwp;
static PyObject* innerGlobals;

static const char* kOuter =
    "def outer_call():\n"
    "    enter_sub()\n";
static const char* kInner =
    "import threading\n"
    "def inner_call():\n"
    "    park(0, threading.get_native_id(), interp_id, 1)  # PARK_HOLD\n";

static PyObject* enterSub(PyObject* self, PyObject* args) {
    (void)self;
    (void)args;
    PyThreadState* outer = PyThreadState_Swap(b);
    parkCall(innerGlobals, "inner_call");
    PyThreadState_Swap(outer);
    Py_RETURN_NONE;
}

static PyMethodDef enterSubDef = {"enter_sub", enterSub, METH_NOARGS, NULL};

static void* waiter(void* arg) {
    (void)arg;
    waiterLwp = syscall(SYS_gettid);
    PyGILState_Ensure();  /* blocks: the main thread holds the GIL in park() */
    return NULL;
}

static void* announce(void* arg) {
    (void)arg;
    parkWait(1);
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    usleep(300 * 1000);
    printf("FACTS {\"pid\": %d, \"version\": \"%.*s\", \"main_lwp\": %ld, \"a\": \"%p\", \"b\": \"%p\", \"b_interp_id\": %ld, "
           "\"python_lwp\": %ld, \"running\": \"%p\", \"gilstate\": \"%p\", \"waiter_lwp\": %ld, \"inner\": \"inner_call\", \"outer\": \"outer_call\"}\nREADY\n",
           getpid(), (int)strcspn(Py_GetVersion(), " "), Py_GetVersion(), mainLwp, (void*)a, (void*)b, parkedAt[0].interpId, parkedAt[0].pythonLwp,
           (void*)parkedAt[0].tstate, (void*)parkedAt[0].gilstate, waiterLwp);
    fflush(stdout);
    pause_until_quit();
    return NULL;
}

int main(void) {
    parkInit();
    mainLwp = syscall(SYS_gettid);
    Py_InitializeEx(0);
    a = PyThreadState_Get();
    b = Py_NewInterpreter();
    innerGlobals = parkGlobals(kInner);
    PyThreadState_Swap(a);
    /* The sub-interpreter's imports took the GIL last for B: A takes it again, as between two
     * requests, so that A is the GIL's last_holder when the swap to B keeps it (<= 3.11). */
    PyEval_RestoreThread(PyEval_SaveThread());
    PyObject* globals = parkGlobals(kOuter);
    PyObject* fn = PyCFunction_New(&enterSubDef, NULL);
    PyDict_SetItemString(globals, "enter_sub", fn);
    Py_DECREF(fn);
    pthread_t t;
    pthread_create(&t, NULL, announce, NULL);
    parkCall(globals, "outer_call");
    return 0;
}
