// SPDX-License-Identifier: Apache-2.0
/* Two copies of libpython (the suite's) in one process: dlmopen(LM_ID_NEWLM) twice, each copy in its own
 * link-map namespace with its own libc, each initialised on the main thread. Both copies'
 * autoTSSkey get pthread key 0 from their own libc, and both store into the same slot of the main
 * thread's struct pthread. Prints FACTS, READY, then pauses. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pause.h"

typedef void (*init_fn)(void);
typedef void* (*get_fn)(void);
typedef int (*run_fn)(const char*);

int main(int argc, char** argv) {
    const char* lib = argc > 1 ? argv[1] : PYTSTATES_LIBPYTHON;  /* the suite's, from CMake */
    void* runtimes[2];
    void* tstates[2];
    for (int i = 0; i < 2; ++i) {
        void* h = dlmopen(LM_ID_NEWLM, lib, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "dlmopen %s: %s\n", lib, dlerror());
            return 2;
        }
        ((init_fn)dlsym(h, "Py_Initialize"))();
        ((run_fn)dlsym(h, "PyRun_SimpleString"))("import sys\n");
        runtimes[i] = dlsym(h, "_PyRuntime");
        tstates[i] = ((get_fn)dlsym(h, "PyThreadState_Get"))();
    }
    printf("FACTS {\"pid\": %d, \"main_lwp\": %ld, \"runtimes\": [\"%p\", \"%p\"], \"tstates\": [\"%p\", \"%p\"]}\nREADY\n",
           getpid(), (long)syscall(SYS_gettid), runtimes[0], runtimes[1], tstates[0], tstates[1]);
    fflush(stdout);
    pause_until_quit();
    return 0;
}
