// SPDX-License-Identifier: Apache-2.0
/* A thread that holds the GIL while it runs code no unwinder can walk, as a JIT's generated code
 * without registered unwind info: the `unknown` place of a thread state.
 *
 * The main thread initialises Python and releases the GIL. The "jit" thread takes the GIL with
 * PyGILState_Ensure (its own thread state, made on it), records from Python which OS thread it is
 * (threading.get_native_id()), then calls into an anonymous executable mapping (no module, no CFI)
 * that clears every general register and waits in pause() forever, the GIL held. No frame of any
 * thread names its thread state (the pointer is kept only in a global, for FACTS), no thread runs
 * Python, and that thread's stack cannot be unwound past the mapping: up to 3.11
 * (gilstate.tstate_current) the state is known to run, on a thread that cannot be told. Prints
 * FACTS, READY, pauses. */
#include <Python.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pause.h"

static long jitLwp, pythonLwp, mainLwp;
static PyThreadState* jitState;
static PyThreadState* mainState;
static int gilChecked = -1;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready = 0;

/* xor of rax..r15 but rsp (no stale pointer left in a register), then: mov eax, 34 (pause);
 * syscall; jmp back to the mov. Never returns. */
static const unsigned char kCode[] = {
    0x31, 0xc0, 0x31, 0xdb, 0x31, 0xc9, 0x31, 0xd2, 0x31, 0xf6, 0x31, 0xff, 0x31, 0xed,
    0x45, 0x31, 0xc0, 0x45, 0x31, 0xc9, 0x45, 0x31, 0xd2, 0x45, 0x31, 0xdb,
    0x45, 0x31, 0xe4, 0x45, 0x31, 0xed, 0x45, 0x31, 0xf6, 0x45, 0x31, 0xff,
    0xb8, 0x22, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xeb, 0xf7};

/* Out of line: the state's pointer stays in this call's frame, below the thread's live stack. */
static __attribute__((noinline)) void takeGil(void) {
    PyGILState_Ensure();
    jitState = PyThreadState_Get();
    gilChecked = PyGILState_Check();
    PyObject* main = PyImport_AddModule("__main__");
    PyObject* globals = PyModule_GetDict(main);
    PyObject* r = PyRun_String("import threading\nnative_id = threading.get_native_id()\n", Py_file_input, globals, globals);
    Py_XDECREF(r);
    PyObject* id = PyDict_GetItemString(globals, "native_id");
    pythonLwp = id ? PyLong_AsLong(id) : -1;
}

static void* jit(void* arg) {
    (void)arg;
    jitLwp = syscall(SYS_gettid);
    takeGil();
    void* page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) _exit(3);
    memcpy(page, kCode, sizeof kCode);
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&m);
    ((void (*)(void))page)();
    return NULL;
}

int main(void) {
    mainLwp = syscall(SYS_gettid);
    Py_InitializeEx(0);
    mainState = PyEval_SaveThread();
    pthread_t t;
    pthread_create(&t, NULL, jit, NULL);
    pthread_mutex_lock(&m);
    while (!ready) pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    usleep(200 * 1000);  /* the jit thread reaches pause() */
    printf("FACTS {\"pid\": %d, \"main_lwp\": %ld, \"main_tstate\": \"%p\", \"jit_lwp\": %ld, \"python_lwp\": %ld, "
           "\"jit_tstate\": \"%p\", \"gil_check\": %d}\nREADY\n",
           getpid(), mainLwp, (void*)mainState, jitLwp, pythonLwp, (void*)jitState, gilChecked);
    fflush(stdout);
    pause_until_quit();
    return 0;
}
