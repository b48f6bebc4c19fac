// SPDX-License-Identifier: Apache-2.0
/* The park of the thread-state shape scenarios (swap_hold_host, nested_host, pool_host): a C
 * function Python calls, park(where), that tells the main thread which OS thread and which
 * interpreter it runs in (threading.get_native_id() and the interpreter's id, passed from Python;
 * the C side's gettid(), PyThreadState_Get() and PyGILState_GetThisThreadState() beside them), then blocks in read() on a pipe
 * nobody writes: park(slot, lwp, interp_id, PARK_HOLD) keeps the GIL while it blocks (a C extension
 * that does not release it); PARK_RELEASE releases it around the read, as Py_BEGIN_ALLOW_THREADS
 * does; PARK_TELL returns at once (the caller goes on, to spin). */
#ifndef PYTSTATES_SCENARIO_PARK_H
#define PYTSTATES_SCENARIO_PARK_H

#include <Python.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PARK_MAX 8
enum { PARK_RELEASE = 0, PARK_HOLD = 1, PARK_TELL = 2 };

struct parked {
    long lwp, pythonLwp, interpId;
    PyThreadState *tstate, *gilstate; /* PyThreadState_Get(), PyGILState_GetThisThreadState() */
};

static struct parked parkedAt[PARK_MAX];
static int parkedCount;
static pthread_mutex_t parkLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t parkCond = PTHREAD_COND_INITIALIZER;
static int parkPipe[2] = {-1, -1};

static PyObject* park(PyObject* self, PyObject* args) {
    (void)self;
    long slot, pythonLwp, interpId;
    int mode;
    if (!PyArg_ParseTuple(args, "llli", &slot, &pythonLwp, &interpId, &mode)) return NULL;
    if (slot < 0 || slot >= PARK_MAX) return PyErr_Format(PyExc_ValueError, "slot %ld", slot);
    pthread_mutex_lock(&parkLock);
    parkedAt[slot].lwp = syscall(SYS_gettid);
    parkedAt[slot].pythonLwp = pythonLwp;
    parkedAt[slot].interpId = interpId;
    parkedAt[slot].tstate = PyThreadState_Get();
    parkedAt[slot].gilstate = PyGILState_GetThisThreadState();
    ++parkedCount;
    pthread_cond_broadcast(&parkCond);
    pthread_mutex_unlock(&parkLock);
    char byte;
    if (mode == PARK_TELL) Py_RETURN_NONE;
    if (mode == PARK_HOLD) {
        (void)!read(parkPipe[0], &byte, 1);
    } else {
        Py_BEGIN_ALLOW_THREADS
        (void)!read(parkPipe[0], &byte, 1);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static PyMethodDef parkDef = {"park", park, METH_VARARGS, NULL};

/* Puts park() and the interpreter's id into the current interpreter's __main__, and defines
 * `code` there. */
static PyObject* parkGlobals(const char* code) {
    PyObject* globals = PyModule_GetDict(PyImport_AddModule("__main__"));
    PyObject* fn = PyCFunction_New(&parkDef, NULL);
    PyDict_SetItemString(globals, "park", fn);
    Py_DECREF(fn);
    PyObject* id = PyLong_FromLongLong((long long)PyInterpreterState_GetID(PyThreadState_Get()->interp));
    PyDict_SetItemString(globals, "interp_id", id);
    Py_DECREF(id);
    PyObject* done = PyRun_String(code, Py_file_input, globals, globals);
    if (!done) PyErr_Print();
    Py_XDECREF(done);
    return globals;
}

/* Calls globals[name]() and prints Python's error, if any. */
static void parkCall(PyObject* globals, const char* name) {
    PyObject* fn = PyDict_GetItemString(globals, name);
    PyObject* result = fn ? PyObject_CallObject(fn, NULL) : NULL;
    if (!result) PyErr_Print();
    Py_XDECREF(result);
}

/* Waits until `n` calls of park() have told where they run, then lets them reach their read(). */
static void parkWait(int n) {
    pthread_mutex_lock(&parkLock);
    while (parkedCount < n) pthread_cond_wait(&parkCond, &parkLock);
    pthread_mutex_unlock(&parkLock);
    usleep(200 * 1000);
}

static void parkInit(void) {
    if (pipe(parkPipe) != 0) _exit(3);
}

#endif
