/* SPDX-License-Identifier: Apache-2.0 */
/* libpytstates.so.0: the pytstates engine behind a small C ABI, for the CLI and every front end
 * (the pybind11 module, Python's ctypes, the lldb plugin). A target is either the CLI's own (a core
 * path or a pid, through pytstates_main) or one a debugger describes by callbacks and arrays
 * (pytstates_target). Reports come out as the CLI's text or JSON (CONTRACT.md).
 * No C++ exception crosses this boundary: a failure is status 2 and one line in *error.
 * Every char* handed out through a char** (and pytstates_help's, pytstates_record_help's result)
 * is malloc'ed: free it with pytstates_free. */
#ifndef PYTSTATES_H
#define PYTSTATES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PYTSTATES_API __attribute__((visibility("default")))

/* si_code when the debugger knows the signal's number only (lldb's stop reason): no siginfo. */
#define PYTSTATES_NO_SIGINFO INT32_MIN
/* pytstates_thread.syscall of a thread whose system call the debugger cannot tell: read from
 * /proc/PID/task/LWP/syscall when the target is local and live, else none. */
#define PYTSTATES_SYSCALL_UNKNOWN (-2)

typedef struct {
    int32_t lwp;
    int32_t debugger_number;   /* the debugger's thread number, shown beside the LWP; 0: none */
    uint64_t thread_pointer;   /* fs_base | tpidr; 0: unknown (filled from glibc's thread lists) */
    const uint64_t* registers; /* the innermost frame's, in the DWARF order of the target's machine
                                  (pytstates_register_names); NULL or 0 registers: unknown */
    uint32_t register_count;
    int64_t syscall;           /* the system call the thread is in; -1: none; PYTSTATES_SYSCALL_UNKNOWN */
} pytstates_thread;

typedef struct {
    int32_t lwp, signo, code; /* code: si_code, or PYTSTATES_NO_SIGINFO */
    uint64_t address;         /* si_addr (code > 0) */
    int32_t sender_pid, sender_uid; /* si_pid, si_uid (code <= 0) */
} pytstates_signal;

typedef struct {
    void* context;
    /* Reads up to length bytes at address; returns how many were readable (0: none). */
    size_t (*read_memory)(void* context, uint64_t address, void* buffer, size_t length);
    const pytstates_thread* threads;
    size_t thread_count;
    const uint64_t* auxv;  /* (type, value) pairs: 2 * auxv_count values */
    size_t auxv_count;
    const char* executable; /* may be NULL or "" */
    int32_t pid;
    int32_t live;   /* a running process (else a core) */
    int32_t local;  /* a live process on this machine: its /proc may be read */
    const char* sysroot; /* may be NULL */
    const char* const* debug_dirs;
    size_t debug_dir_count;
    const pytstates_signal* crash; /* NULL: none */
} pytstates_target;

/* The whole command line (pytstates tstates|internals|check ...): returns the exit status. */
PYTSTATES_API int pytstates_main(int argc, char** argv);
/* command: "tstates" | "internals" | "check"; args as the debugger commands take them
 * ("--json", "--frames", "3"). Returns 0, 1 (an error finding) or 2 (*error set). target NULL:
 * the arguments are only checked (0, or 2 with the bad one). */
PYTSTATES_API int pytstates_run(const char* command, const char* const* args, size_t arg_count, const pytstates_target* target,
                                char** output, char** error);
PYTSTATES_API const char* pytstates_version(void);
PYTSTATES_API char* pytstates_help(const char* command);
/* "x86_64" | "aarch64": the registers in DWARF order, space-separated; "" for another machine. */
PYTSTATES_API const char* pytstates_register_names(const char* machine);
/* "fs_base" | "tpidr"; "" for another machine. machine: also a debugger's name (i386:x86-64,
 * a triple x86_64-pc-linux-gnu, arm64). */
PYTSTATES_API const char* pytstates_thread_pointer_register(const char* machine);
/* The register holding the system call's number when it is not a DWARF register (x86_64:
 * orig_rax, appended after the DWARF registers of a pytstates_thread); "" (aarch64: x8). */
PYTSTATES_API const char* pytstates_syscall_register(const char* machine);

/* py-tstates-record (one recording per process). record_on plans the breakpoints: *probes_json is
 * [{"address": N, "event": S, "tstate_register": S, "key_register": S, "key_offset": N}, ...],
 * *frames the return addresses to keep per hit. Returns 0; 1 when there is nothing to plan yet
 * (target NULL: no process; or no CPython loaded in it): the options are checked, *text says the
 * recording is armed, and the front end calls again with the process as it loads modules; or 2
 * with *error. */
PYTSTATES_API int pytstates_record_on(const char* const* args, size_t arg_count, const pytstates_target* target, char** text,
                                      char** probes_json, int* frames, char** error);
/* The functions an armed recording waits at, space-separated: a front end that does not see
 * modules load (lldb) breaks at their entries by name, pending until a module defines one, and
 * calls pytstates_record_on there; each CPython makes its first thread state through one. */
PYTSTATES_API const char* pytstates_record_hooks(void);
/* One breakpoint hit (the hot path): key < 0: none. */
PYTSTATES_API void pytstates_record_hit(size_t probe, uint64_t tstate, int32_t lwp, int64_t key, const uint64_t* pcs, size_t pc_count);
/* One breakpoint hit read through the debugger: what it keeps (the thread state's register, the
 * TLS key, how many frames) is decided by the library. Returns 1 when recorded, 0 when not. */
typedef struct {
    void* context;
    int (*read_register)(void* context, const char* name, uint64_t* value); /* 0: unreadable */
    size_t (*read_memory)(void* context, uint64_t address, void* buffer, size_t length);
    int (*next_pc)(void* context, uint64_t* pc); /* the next frame's pc, innermost first; 0: no more */
} pytstates_hit_readers;
PYTSTATES_API int pytstates_record_hit_from(size_t probe, int32_t lwp, const pytstates_hit_readers* readers);
/* what: "show" (argument: "" or N) | "save" (argument: FILE); target (NULL: the process is gone)
 * names the recorded frames first. */
PYTSTATES_API int pytstates_record_output(const char* what, const char* argument, const pytstates_target* target, char** output,
                                          char** error);
/* hits, events recorded, events kept, events dropped */
PYTSTATES_API void pytstates_record_stats(uint64_t out[4]);
/* Names the recorded frames while the modules are still mapped (the process is about to exit). */
PYTSTATES_API void pytstates_record_name(const pytstates_target* target);
PYTSTATES_API char* pytstates_record_help(void);
/* What a bare py-tstates-record says (one line): armed (the front end waits for CPython to load),
 * on (breakpoints: how many the front end has set) or off, with the recording's counts. */
PYTSTATES_API char* pytstates_record_status(int32_t armed, size_t breakpoints);
/* The debugger view: one stop of a debugger's target, analysed once (check's analysis with every
 * thread state's whole Python stack, waits, findings, asyncio tasks, TLS caches), then asked many
 * small questions by the debugger commands (pyt bt, pyt up, pyt tstate ...). Every answer is worded
 * here, so gdb, lldb-19's Python and lldb-14's plugin print the same bytes (docs/frontends.md).
 * target->read_memory and target->context must stay valid until pytstates_view_close (memory is
 * read when a question needs it: locals, a pointer's memory); the rest of *target is copied.
 * A front end keeps one view per stop and closes it when the target may have changed (gdb: cont,
 * stop, exited, new_objfile, clear_objfiles, memory_changed, register_changed, inferior_call,
 * new_thread; lldb: another SBProcess.GetStopID() or process). */
typedef struct pytstates_view pytstates_view;
/* args: "--no-dwarf" (symbol tables and _Py_DebugOffsets only). Returns 0, or 2 with *error (one
 * line: "no CPython runtime found ..."). */
PYTSTATES_API int pytstates_view_open(const pytstates_target* target, const char* const* args, size_t arg_count, pytstates_view** view,
                                      char** error);
/* question: one JSON object {"ask": WHAT, ...}; *answer: one JSON object. Returns 0, or 2 with
 * *error (one line: "LWP 12 runs no Python", "'x' not found"). Every answer carries "text": what
 * the command prints, every string read from the target escaped for a terminal. Addresses are
 * JSON numbers (a question may also give them as strings, "0x7f..."). Questions:
 *  {"ask":"stack","lwp":N} -> lwp, tstate (the one it runs now), tstates (innermost first),
 *     interpreter, interpreter_id, version, thread_name (Python's; null), gil ("holds" | "waits" |
 *     "blocked" | "released" | "no-gil" | "crashed" (faulted entering a wait) | "unknown"), gil_line (words), eval_groups, frames: every
 *     Python frame innermost first {index, function, file, line, column, end_line, end_column
 *     (3.11+ co_positions, 0-based columns; -1 unknown), address (the interpreter frame, or the
 *     PyFrameObject <= 3.10), code, entry, eval_group, tstate}. eval_group: the frame is run by
 *     the eval_group-th C-level _PyEval_EvalFrameDefault frame of the thread, innermost 0,
 *     counting real (not inlined) eval frames; eval_groups of them run Python.
 *  {"ask":"bt","lwp":N,"native":B,"locals":B,"full":B,"eval_levels":[L0,L1,...],"selected":K}
 *     -> text (pyt bt). eval_levels: the debugger's frame number of each eval frame, innermost
 *     first, printed as "[C #L]"; selected: the Python frame marked '*'. With "native":
 *     "native_frames":[[LEVEL,PC],...] (the debugger's frames, innermost first) numbers each native
 *     frame as the debugger does (matched by pc, in order); without it, as pytstates unwinds.
 *  {"ask":"frame","lwp":N,"frame":K,"eval_levels":[...]} -> the frame's fields (as stack's) and
 *     text: its line and source line, as pyt frame/up/down print it
 *  {"ask":"locals","lwp":N,"frame":K} -> frame, function, locals [{name, kind, type, address, repr}]
 *  {"ask":"print","lwp":N,"frame":K,"name":S} -> scope ("local" | "global" | "builtin"), name, kind,
 *     type, address, repr; error "'S' not found"
 *  {"ask":"list","lwp":N,"frame":K[,"start":A[,"end":B]]} -> file, line, start, end, lines [{line, text}]
 *  {"ask":"tstate","address":X} -> address, listed, stale, interpreter, interpreter_id, lwp (runs
 *     it; null), parked, made_by, evidence, holds_gil, caches [{kind: "current" | "gilstate" |
 *     "pybind11", lwp, key, record, variable, words}], findings [{code, severity, message}],
 *     memory (words; not listed), frames, summary (one line), text
 *  {"ask":"interpreter","address":X} -> address, id, main, tstates, gil_holder, gil_holder_lwp, summary
 *  {"ask":"object","address":X} -> address, type, repr (bounded), summary
 *  {"ask":"find-thread","target":S} -> lwp, matched ("thread state" | "thread name" | "asyncio
 *     task"), address, name. S: a thread-state address, a Python thread name, an asyncio task's
 *     address or name (the thread running its loop).
 *  {"ask":"gil-holder"} -> interpreters [{interpreter, id, holder, lwp, gil_known, gil_disabled}] */
PYTSTATES_API int pytstates_view_ask(pytstates_view* view, const char* question, char** answer, char** error);
PYTSTATES_API void pytstates_view_close(pytstates_view* view);

PYTSTATES_API void pytstates_free(void* pointer);

#ifdef __cplusplus
}
#endif

#endif
