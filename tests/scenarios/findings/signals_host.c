// SPDX-License-Identifier: Apache-2.0
/* A service that relies on real-time signals: it embeds Python (three threads run Python code
 * and wait), and counts every SIGRTMIN it receives in a C handler. Real-time signals queue, so
 * the count is exact: a debugger that swallows one while attached is caught. Prints FACTS,
 * READY, then answers on stdin: "count" -> "count N", "ping" -> "pong", "quit" ends it. */
#include <Python.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_long received;

static void onRealtime(int sig) {
    (void)sig;
    atomic_fetch_add(&received, 1);
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = onRealtime;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGRTMIN, &sa, NULL);

    Py_Initialize();
    /* Threads that run Python and spend their time in blocking calls, where signals land. */
    PyRun_SimpleString("import threading, time\n"
                       "def sleeper():\n"
                       "    while True: time.sleep(0.01)\n"
                       "def waiter(e):\n"
                       "    while not e.wait(0.02): pass\n"
                       "for t in (threading.Thread(target=sleeper, daemon=True),\n"
                       "          threading.Thread(target=waiter, args=(threading.Event(),), daemon=True)):\n"
                       "    t.start()\n");
    PyThreadState* saved = PyEval_SaveThread();
    printf("FACTS {\"pid\": %d, \"signal\": %d}\nREADY\n", getpid(), SIGRTMIN);
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "count", 5) == 0) {
            printf("count %ld\n", atomic_load(&received));
        } else if (strncmp(line, "ping", 4) == 0) {
            printf("pong\n");
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
        fflush(stdout);
    }
    (void)saved;
    fflush(stdout);
    _exit(0);
}
