// SPDX-License-Identifier: Apache-2.0
// _pytstates_core: the pybind11 binding of libpytstates.so.0 (plugin/engine/pytstates.h) for the
// Python a debugger embeds (one build per CPython minor). The same functions, with the same
// arguments, as _ctypes_core.py drives through ctypes where no build matches (pytstates/core.py):
//   run(command, args, read_memory, threads, auxv, executable, pid, live, local, numbers, sysroot, siginfo, debug_dirs)
//   record_on(args, read_memory, threads, auxv, executable, pid, local, sysroot, debug_dirs): status 1
//     (armed) when read_memory is None (no process yet) or the process holds no CPython yet
//   record_status(armed, breakpoints), record_hooks()
//   record_output(what, argument, read_memory, threads, auxv, executable, pid, live, local, sysroot, debug_dirs)
//   record_name(read_memory, auxv, executable, pid, local, sysroot, debug_dirs)
//   view_open(args, read_memory, threads, auxv, executable, pid, live, local, numbers, sysroot, siginfo,
//     debug_dirs[, machine]) -> (View or None, error); View.ask(question_json) -> (status, answer_json,
//     error); View.close() (pytstates_view_*: one stop analysed once)
// threads: (lwp, thread_pointer, registers[, syscall]); read_memory(address, length) -> bytes or
// None; siginfo: None or (lwp, signo, code, address, sender_pid, sender_uid), code NO_SIGINFO
// when only the signal is known.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "plugin/engine/pytstates.h"

namespace py = pybind11;

namespace {

// A string the library malloc'ed, freed when it leaves scope.
struct Owned {
    char* text = nullptr;
    ~Owned() { pytstates_free(text); }
    std::string str() const { return text ? text : ""; }
};

// read_memory(address, length) -> bytes or None; a Python error becomes an unreadable range.
size_t readThroughPython(void* context, uint64_t address, void* buffer, size_t length) {
    py::gil_scoped_acquire gil;
    try {
        py::object got = (*static_cast<py::object*>(context))(address, length);
        if (got.is_none()) return 0;
        std::string bytes = got.cast<std::string>();
        size_t n = std::min(bytes.size(), length);
        std::memcpy(buffer, bytes.data(), n);
        return n;
    } catch (const std::exception&) {
        PyErr_Clear();
        return 0;
    }
}

using Siginfo = std::tuple<int, int, int, uint64_t, int, int>;

// A pytstates_target and the storage its pointers point into.
struct Target {
    py::object readMemory;
    std::vector<std::vector<uint64_t>> registers;
    std::vector<pytstates_thread> threads;
    std::vector<uint64_t> auxv;
    std::string executable, sysroot;
    std::vector<std::string> debugDirs;
    std::vector<const char*> debugDirPointers;
    pytstates_signal crash{};
    pytstates_target target{};

    Target(py::object read, const py::sequence& threadRows, const std::map<uint64_t, uint64_t>& aux, std::string exe, int pid,
           bool live, bool local, const std::map<int, int>& numbers, std::string root, const std::optional<Siginfo>& siginfo,
           std::vector<std::string> dirs)
        : readMemory(std::move(read)), executable(std::move(exe)), sysroot(std::move(root)), debugDirs(std::move(dirs)) {
        registers.reserve(threadRows.size());
        for (const auto& row : threadRows) {
            py::sequence fields = row.cast<py::sequence>();
            pytstates_thread t{};
            t.lwp = fields[0].cast<int32_t>();
            t.thread_pointer = fields[1].cast<uint64_t>();
            registers.push_back(fields[2].cast<std::vector<uint64_t>>());
            t.syscall = fields.size() > 3 && !fields[3].is_none() ? fields[3].cast<int64_t>() : -1;
            auto number = numbers.find(t.lwp);
            t.debugger_number = number == numbers.end() ? 0 : number->second;
            threads.push_back(t);
        }
        for (size_t i = 0; i < threads.size(); ++i) {
            threads[i].registers = registers[i].data();
            threads[i].register_count = static_cast<uint32_t>(registers[i].size());
        }
        for (const auto& [type, value] : aux) {
            auxv.push_back(type);
            auxv.push_back(value);
        }
        for (const auto& d : debugDirs) debugDirPointers.push_back(d.c_str());
        target.context = &readMemory;
        target.read_memory = readThroughPython;
        target.threads = threads.data();
        target.thread_count = threads.size();
        target.auxv = auxv.data();
        target.auxv_count = auxv.size() / 2;
        target.executable = executable.c_str();
        target.pid = pid;
        target.live = live;
        target.local = local;
        target.sysroot = sysroot.c_str();
        target.debug_dirs = debugDirPointers.data();
        target.debug_dir_count = debugDirPointers.size();
        if (siginfo) {
            std::tie(crash.lwp, crash.signo, crash.code, crash.address, crash.sender_pid, crash.sender_uid) = *siginfo;
            target.crash = &crash;
        }
    }
};

struct Arguments {
    std::vector<std::string> values;
    std::vector<const char*> pointers;
    explicit Arguments(std::vector<std::string> args) : values(std::move(args)) {
        for (const auto& v : values) pointers.push_back(v.c_str());
    }
};

std::tuple<int, std::string, std::string> run(const std::string& command, const std::vector<std::string>& args, py::object readMemory,
                                              const py::sequence& threads, const std::map<uint64_t, uint64_t>& auxv,
                                              const std::string& executable, int pid, bool live, bool local, const std::map<int, int>& numbers,
                                              const std::string& sysroot, const std::optional<Siginfo>& siginfo,
                                              const std::vector<std::string>& debugDirs) {
    Target t(std::move(readMemory), threads, auxv, executable, pid, live, local, numbers, sysroot, siginfo, debugDirs);
    Arguments a(args);
    Owned output, error;
    int status = pytstates_run(command.c_str(), a.pointers.data(), a.pointers.size(), &t.target, &output.text, &error.text);
    return {status, output.str(), error.str()};
}

using ProbeRow = std::tuple<uint64_t, std::string, std::string, std::string, uint64_t>;

std::tuple<int, std::string, std::string, std::vector<ProbeRow>, int> recordOn(const std::vector<std::string>& args, py::object readMemory,
                                                                               const py::sequence& threads,
                                                                               const std::map<uint64_t, uint64_t>& auxv,
                                                                               const std::string& executable, int pid, bool local,
                                                                               const std::string& sysroot,
                                                                               const std::vector<std::string>& debugDirs) {
    // read_memory None: no process yet (the recording is armed, status 1).
    bool none = readMemory.is_none();
    Target t(std::move(readMemory), threads, auxv, executable, pid, true, local, {}, sysroot, std::nullopt, debugDirs);
    Arguments a(args);
    Owned text, probes, error;
    int frames = 0;
    int status = pytstates_record_on(a.pointers.data(), a.pointers.size(), none ? nullptr : &t.target, &text.text, &probes.text, &frames,
                                     &error.text);
    std::vector<ProbeRow> rows;
    if (status == 0) {
        py::object parsed = py::module_::import("json").attr("loads")(probes.str());
        for (const auto& p : parsed)
            rows.emplace_back(p["address"].cast<uint64_t>(), p["event"].cast<std::string>(), p["tstate_register"].cast<std::string>(),
                              p["key_register"].cast<std::string>(), p["key_offset"].cast<uint64_t>());
    }
    return {status, text.str(), error.str(), rows, frames};
}

void recordHit(size_t probe, uint64_t tstate, int lwp, int64_t key, const std::vector<uint64_t>& pcs) {
    pytstates_record_hit(probe, tstate, lwp, key, pcs.data(), pcs.size());
}

std::tuple<int, std::string, std::string> recordOutput(const std::string& what, const std::string& argument, py::object readMemory,
                                                       const py::sequence& threads, const std::map<uint64_t, uint64_t>& auxv,
                                                       const std::string& executable, int pid, bool live, bool local,
                                                       const std::string& sysroot, const std::vector<std::string>& debugDirs) {
    Target t(std::move(readMemory), threads, auxv, executable, pid, live, local, {}, sysroot, std::nullopt, debugDirs);
    Owned output, error;
    int status = pytstates_record_output(what.c_str(), argument.c_str(), t.threads.empty() ? nullptr : &t.target, &output.text, &error.text);
    return {status, output.str(), error.str()};
}

void recordName(py::object readMemory, const std::map<uint64_t, uint64_t>& auxv, const std::string& executable, int pid, bool local,
                const std::string& sysroot, const std::vector<std::string>& debugDirs) {
    Target t(std::move(readMemory), py::list(), auxv, executable, pid, true, local, {}, sysroot, std::nullopt, debugDirs);
    pytstates_record_name(&t.target);
}

// One probe hit read through the debugger's callbacks: read_register(name) -> int, read_memory,
// pcs an iterable of the frames' pcs (consumed only as far as the library asks).
struct HitContext {
    py::object readRegister, readMemory, next;
};

int readRegisterThroughPython(void* context, const char* name, uint64_t* value) {
    auto* c = static_cast<HitContext*>(context);
    try {
        py::object got = c->readRegister(name);
        unsigned long long v = PyLong_AsUnsignedLongLongMask(got.ptr());
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        *value = v;
        return 1;
    } catch (const std::exception&) {
        PyErr_Clear();
        return 0;
    }
}

size_t readHitMemory(void* context, uint64_t address, void* buffer, size_t length) {
    return readThroughPython(&static_cast<HitContext*>(context)->readMemory, address, buffer, length);
}

int nextPcThroughPython(void* context, uint64_t* pc) {
    auto* c = static_cast<HitContext*>(context);
    if (!c->next) return 0;
    // PyIter_Next, not py::iterator: that reads one item ahead, a frame more for the debugger to unwind.
    py::object item = py::reinterpret_steal<py::object>(PyIter_Next(c->next.ptr()));
    if (!item) {
        PyErr_Clear();
        return 0;
    }
    unsigned long long v = PyLong_AsUnsignedLongLongMask(item.ptr());
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *pc = v;
    return 1;
}

bool recordHitFrom(size_t probe, py::object readRegister, py::object readMemory, int lwp, const py::iterable& pcs) {
    HitContext c{std::move(readRegister), std::move(readMemory), py::reinterpret_steal<py::object>(PyObject_GetIter(pcs.ptr()))};
    if (!c.next) PyErr_Clear();
    pytstates_hit_readers readers{&c, readRegisterThroughPython, readHitMemory, nextPcThroughPython};
    return pytstates_record_hit_from(probe, lwp, &readers) != 0;
}

std::string recordStatus(bool armed, size_t breakpoints) {
    Owned text;
    text.text = pytstates_record_status(armed, breakpoints);
    return text.str();
}

std::tuple<uint64_t, uint64_t, uint64_t, uint64_t> recordStats() {
    uint64_t out[4];
    pytstates_record_stats(out);
    return {out[0], out[1], out[2], out[3]};
}

std::string help(const std::string& command) {
    Owned text;
    text.text = pytstates_help(command.c_str());
    return text.str();
}

std::string recordHelp() {
    Owned text;
    text.text = pytstates_record_help();
    return text.str();
}

std::vector<std::string> registerNames(const std::string& machine) {
    std::vector<std::string> names;
    std::string all = pytstates_register_names(machine.c_str());
    size_t start = 0;
    while (start < all.size()) {
        size_t end = all.find(' ', start);
        if (end == std::string::npos) end = all.size();
        if (end > start) names.push_back(all.substr(start, end - start));
        start = end + 1;
    }
    return names;
}

// One stop of the debugger's target (pytstates_view): the target's storage (read_memory above
// all) lives as long as the view, which reads memory when a question needs it.
class View {
public:
    View(std::unique_ptr<Target> target, pytstates_view* view) : target_(std::move(target)), view_(view) {}
    ~View() { close(); }
    View(const View&) = delete;
    View& operator=(const View&) = delete;

    std::tuple<int, std::string, std::string> ask(const std::string& question) {
        if (!view_) return {2, "", "the view is closed"};
        Owned answer, error;
        int status = pytstates_view_ask(view_, question.c_str(), &answer.text, &error.text);
        return {status, answer.str(), error.str()};
    }
    void close() {
        if (view_) pytstates_view_close(view_);
        view_ = nullptr;
    }

private:
    std::unique_ptr<Target> target_;
    pytstates_view* view_ = nullptr;
};

std::tuple<py::object, std::string> viewOpen(const std::vector<std::string>& args, py::object readMemory, const py::sequence& threads,
                                              const std::map<uint64_t, uint64_t>& auxv, const std::string& executable, int pid, bool live,
                                              bool local, const std::map<int, int>& numbers, const std::string& sysroot,
                                              const std::optional<Siginfo>& siginfo, const std::vector<std::string>& debugDirs) {
    auto t = std::make_unique<Target>(std::move(readMemory), threads, auxv, executable, pid, live, local, numbers, sysroot, siginfo, debugDirs);
    Arguments a(args);
    Owned error;
    pytstates_view* view = nullptr;
    if (pytstates_view_open(&t->target, a.pointers.data(), a.pointers.size(), &view, &error.text) != 0 || !view)
        return {py::none(), error.str()};
    return {py::cast(new View(std::move(t), view), py::return_value_policy::take_ownership), ""};
}

}  // namespace

PYBIND11_MODULE(_pytstates_core, m) {
    m.doc() = "pytstates: libpytstates.so.0 for a debugger's Python";
    // Each function also takes the machine's name last (gdb's front end passes it): the library
    // tells the machine from the registers' count and the executable, so it is not needed.
    m.def("run", &run, "Run tstates|internals|check on what the debugger has open; returns (status, output, error)");
    m.def("run", [](const std::string& command, const std::vector<std::string>& args, py::object readMemory, const py::sequence& threads,
                    const std::map<uint64_t, uint64_t>& auxv, const std::string& executable, int pid, bool live, bool local,
                    const std::map<int, int>& numbers, const std::string& sysroot, const std::optional<Siginfo>& siginfo,
                    const std::vector<std::string>& debugDirs, const std::string&) {
        return run(command, args, std::move(readMemory), threads, auxv, executable, pid, live, local, numbers, sysroot, siginfo, debugDirs);
    });
    m.def("record_on", [](const std::vector<std::string>& args, py::object readMemory, const py::sequence& threads,
                          const std::map<uint64_t, uint64_t>& auxv, const std::string& executable, int pid, bool local,
                          const std::string& sysroot, const std::vector<std::string>& debugDirs, const std::string&) {
        return recordOn(args, std::move(readMemory), threads, auxv, executable, pid, local, sysroot, debugDirs);
    });
    m.def("record_output", [](const std::string& what, const std::string& argument, py::object readMemory, const py::sequence& threads,
                              const std::map<uint64_t, uint64_t>& auxv, const std::string& executable, int pid, bool live, bool local,
                              const std::string& sysroot, const std::vector<std::string>& debugDirs, const std::string&) {
        return recordOutput(what, argument, std::move(readMemory), threads, auxv, executable, pid, live, local, sysroot, debugDirs);
    });
    m.def("record_name", [](py::object readMemory, const std::map<uint64_t, uint64_t>& auxv, const std::string& executable, int pid,
                            bool local, const std::string& sysroot, const std::vector<std::string>& debugDirs, const std::string&) {
        recordName(std::move(readMemory), auxv, executable, pid, local, sysroot, debugDirs);
    });
    m.def("record_hit_from", &recordHitFrom, "One breakpoint hit, read through callbacks: what it keeps is decided by the library");
    m.def("syscall_register", [](const std::string& machine) { return std::string(pytstates_syscall_register(machine.c_str())); });
    m.def("help", &help);
    m.def("record_on", &recordOn, "Plan the lifecycle breakpoints; returns (status, text, error, probes, frames)");
    m.def("record_hit", &recordHit, "One breakpoint hit");
    m.def("record_output", &recordOutput, "show [N] | save FILE");
    m.def("record_stats", &recordStats);
    m.def("record_status", &recordStatus, "What a bare py-tstates-record says: armed, on (breakpoints) or off");
    m.def("record_hooks", [] { return std::string(pytstates_record_hooks()); },
          "The functions an armed recording waits at (by name), space-separated");
    m.def("record_name", &recordName);
    m.def("record_help", &recordHelp);
    m.def("register_names", &registerNames, "The registers of a machine (x86_64, aarch64) in DWARF order");
    m.def("thread_pointer_register", [](const std::string& machine) { return std::string(pytstates_thread_pointer_register(machine.c_str())); });
    py::class_<View>(m, "View")
        .def("ask", &View::ask, "One question (JSON text): (status, answer JSON text, error)")
        .def("close", &View::close);
    m.def("view_open", &viewOpen, "Analyse the debugger's stop once: (View or None, error)");
    m.def("view_open", [](const std::vector<std::string>& args, py::object readMemory, const py::sequence& threads,
                          const std::map<uint64_t, uint64_t>& auxv, const std::string& executable, int pid, bool live, bool local,
                          const std::map<int, int>& numbers, const std::string& sysroot, const std::optional<Siginfo>& siginfo,
                          const std::vector<std::string>& debugDirs, const std::string&) {
        return viewOpen(args, std::move(readMemory), threads, auxv, executable, pid, live, local, numbers, sysroot, siginfo, debugDirs);
    });
    m.def("version", [] { return std::string(pytstates_version()); });
    m.attr("built_for") = PY_VERSION;
    m.attr("binding") = "pybind11";
    m.attr("NO_SIGINFO") = PYTSTATES_NO_SIGINFO;
    m.attr("SYSCALL_UNKNOWN") = PYTSTATES_SYSCALL_UNKNOWN;
}
