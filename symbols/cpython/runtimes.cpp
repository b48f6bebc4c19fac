// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/runtimes.h"

#include <elf.h>

#include <cstring>
#include <regex>
#include <set>

#include "symbols/cpython/debug_offsets.h"
#include "symbols/cpython/python_objects.h"
#include "symbols/elf/dwarf_types.h"
#include "symbols/modules/debug_session.h"
#include "symbols/modules/module_files.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

constexpr size_t kMaxInterpreters = 1024;
constexpr size_t kMaxThreadStates = 100000;
constexpr uint64_t kFrameBytes = 128;         // covers the fields a frame walk reads of a frame

// The version from the runtime's own module, never by running anything.
// _Py_DebugOffsets first (3.13+): it is the running runtime's own, and its shape follows it.
std::optional<uint32_t> detectVersionHex(const Target& target, const LoadedModule& module, uint64_t runtime) {
    if (auto header = readDebugOffsetsHeader(target, runtime); header && (header->version >> 24) == 3)
        return static_cast<uint32_t>(header->version);
    if (auto sym = findModuleSymbol(module, "Py_Version")) {  // 3.11+
        if (auto v = target.readValue<uint32_t>(module.bias + sym->value); v && (*v >> 24) == 3) return *v;
    }
    // Older versions: the minor from the file name (libpython3.9.so.1.0, python3.9).
    static const std::regex minorInName(R"(python3\.(\d+))");
    std::smatch m;
    if (std::regex_search(module.path, m, minorInName)) return 0x03000000u | (std::stoul(m[1]) << 16);
    return std::nullopt;
}

// _Py_tss_tstate is a static C thread-local: its symbol is in .symtab (or the debug file) only.
// Without it, the exported accessor's code says where it is.
void findTssTstate(const Target& target, const LoadedModule& module, int minor, bool useDwarf, Runtime& rt) {
    auto tss = useDwarf ? findModuleSymbol(module, "_Py_tss_tstate")
                        : (module.elf ? module.elf->findSymbol("_Py_tss_tstate") : std::nullopt);
    if (tss && tss->type == STT_TLS) {
        rt.tssTstate = TlsLocation{TlsLocation::Kind::ModuleOffset, static_cast<int64_t>(tss->value), "symbol"};
        return;
    }
    const char* accessor = minor == 12 ? "_PyThreadState_UncheckedGet" : "PyThreadState_GetUnchecked";
    auto fn = findModuleSymbol(module, accessor);
    if (fn) rt.tssTstate = decodeTlsAccess(target, module, fn->value);
    if (!rt.tssTstate)
        rt.tssTstateNote = std::string("_Py_tss_tstate is not in the symbol tables and ") + accessor +
                           (fn ? "'s code has no known TLS access sequence" : " is not exported") +
                           ": CPython's current thread state per thread is unknown";
}

// 3.15+: PyGILState's slot is a static C thread-local too (_Py_tss_gilstate, no pthread key);
// without the symbol, PyGILState_GetThisThreadState's code says where it is.
void findTssGilstate(const Target& target, const LoadedModule& module, bool useDwarf, Runtime& rt) {
    auto tss = useDwarf ? findModuleSymbol(module, "_Py_tss_gilstate")
                        : (module.elf ? module.elf->findSymbol("_Py_tss_gilstate") : std::nullopt);
    if (tss && tss->type == STT_TLS) {
        rt.tssGilstate = TlsLocation{TlsLocation::Kind::ModuleOffset, static_cast<int64_t>(tss->value), "symbol"};
        return;
    }
    if (auto fn = findModuleSymbol(module, "PyGILState_GetThisThreadState")) rt.tssGilstate = decodeTlsAccess(target, module, fn->value);
    if (!rt.tssGilstate)
        rt.notes.push_back("_Py_tss_gilstate is not in the symbol tables and PyGILState_GetThisThreadState's code has no known TLS "
                           "access sequence: PyGILState's thread state per thread is unknown");
}

// What the walk cannot do without, and what it reads when it can.
struct Needed {
    int64_t CPythonLayout::*field;
    const char* without;  // what is lost without it; null: the walk needs it
};
const Needed kNeeded[] = {
    {&CPythonLayout::runtimeInterpretersHead, nullptr},
    {&CPythonLayout::interpNext, nullptr},
    {&CPythonLayout::interpThreadsHead, nullptr},
    {&CPythonLayout::interpId, nullptr},
    {&CPythonLayout::tstatePrev, nullptr},
    {&CPythonLayout::tstateNext, nullptr},
    {&CPythonLayout::tstateInterp, nullptr},
    {&CPythonLayout::tstateThreadId, nullptr},
    {&CPythonLayout::runtimeInterpretersMain, "the main interpreter is taken to be the one with id 0"},
    {&CPythonLayout::interpDict, "pybind11 records in the interpreter's state dict are not read"},
    {&CPythonLayout::tstateId, "thread-state ids are not shown"},
};

// Best source last wins: the built-in table of this build (never one measured on another build),
// then _Py_DebugOffsets (3.13+), then DWARF; each later source records where it contradicts an
// earlier one, and `sources` says where each field came from.
CPythonLayout layoutFor(const Target& target, uint64_t runtime, int minor, const LoadedModule& module, bool useDwarf,
                        std::vector<std::string>* notes, std::string* refused) {
    auto header = minor >= 13 ? readDebugOffsetsHeader(target, runtime) : std::nullopt;
    bool freeThreaded = header && header->freeThreaded;
    CPythonLayout layout;
    int micro = header ? static_cast<int>((header->version >> 8) & 0xff) : -1;
    // A debug build (Py_DEBUG, as Debian's python3.Xd; Py_REF_DEBUG's _Py_NegativeRefcount says so)
    // lays out some structs unlike the release build the tables were measured on: it gets none.
    bool debugBuild = findModuleSymbol(module, "_Py_NegativeRefcount").has_value();
    bool known = !debugBuild && tableLayout(minor, freeThreaded, target.arch().machine, &layout, micro);
    if (!known) {
        // No table fits this build: every field comes from the sources below or stays unknown,
        // but PyDictKeysObject's (unchanged from 3.11 to 3.15, free-threaded or not).
        CPythonLayout fixed;
        for (const auto& f : layoutFields()) layout.*f.member = kAbsent;
        for (auto member : {&CPythonLayout::dictKeysSize, &CPythonLayout::dictKeysIndexBytes, &CPythonLayout::dictKeysKind,
                            &CPythonLayout::dictKeysNentries, &CPythonLayout::dictKeysIndices})
            layout.assign(member, fixed.*member, "table");
        layout.minor = minor;
        layout.freeThreaded = freeThreaded;
    }
    std::string offsetsWhy;
    if (minor >= 13) {
        DebugOffsetsUse use = applyDebugOffsets(target, runtime, &layout);
        if (!use.applied) offsetsWhy = use.why;
        if (!use.applied && (known || !useDwarf)) notes->push_back("_Py_DebugOffsets not used: " + use.why);
        if (!use.notice.empty()) notes->push_back(use.notice);
    }
    bool dwarf = false;
    if (useDwarf)
        if (DwarfTypes* types = target.dwarfTypes(module)) {
            dwarf = applyDwarfLayout(*types, &layout);
            layout.dwarfCached = dwarf && types->answeredFromCache();
        }
    for (const auto& d : layout.disagreements) notes->push_back("layout: " + d);
    if (!known && !dwarf && layout.source != "debug_offsets") {
        std::string build = "CPython 3." + std::to_string(minor) + (freeThreaded ? " (free-threaded)" : "") +
                            (debugBuild ? " (a debug build)" : "");
        *refused = build + " has no built-in table" + (offsetsWhy.empty() ? "" : ", its _Py_DebugOffsets cannot be used (" + offsetsWhy + ")") +
                   (useDwarf ? " and no DWARF was found" : " and DWARF is not used (--no-dwarf)");
        layout.source.clear();
        return layout;
    }
    std::vector<std::string> missing, lost;
    for (const auto& n : kNeeded) {
        if (layout.*n.field != kAbsent) continue;
        if (!n.without) missing.push_back(layoutFieldLabel(n.field));
        else lost.push_back(std::string(layoutFieldLabel(n.field)) + " is unknown: " + n.without);
    }
    if (!missing.empty()) {
        std::string list;
        for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
        *refused = "CPython 3." + std::to_string(minor) + ": no source gives " + list;
        layout.source.clear();
        return layout;
    }
    // A build pytstates has no table for: what that costs, in the one notice about it.
    std::string lostWords;
    for (const auto& l : lost) lostWords += (lostWords.empty() ? "" : "; ") + l;
    bool untested = !notes->empty() && notes->back().find("newer than any") != std::string::npos;
    if (untested && !lostWords.empty()) notes->back() += "; without a table for it: " + lostWords;
    else if (!lostWords.empty()) notes->push_back(lostWords);
    return layout;
}

class Walker {
public:
    Walker(const Target& target, Runtime& runtime) : target_(target), rt_(runtime), l_(runtime.layout) {}

    // False (and *why) when the candidate does not look like a live runtime.
    bool walk(std::string* why) {
        auto head = target_.readPointer(rt_.address + l_.runtimeInterpretersHead);
        if (!head) {
            *why = "_PyRuntime is unreadable";
            return false;
        }
        if (!*head) {
            *why = "not initialised (no interpreter)";
            return false;
        }
        uint64_t mainInterp = l_.runtimeInterpretersMain == kAbsent ? 0 : target_.readPointer(rt_.address + l_.runtimeInterpretersMain).value_or(0);
        if (l_.runtimeTstateCurrent != kAbsent)
            rt_.tstateCurrent = target_.readPointer(rt_.address + l_.runtimeTstateCurrent).value_or(0);
        if (l_.runtimeAutoTssKey != kAbsent) {
            auto initialised = target_.readValue<int32_t>(rt_.address + l_.runtimeAutoTssKey);
            auto key = target_.readValue<uint32_t>(rt_.address + l_.runtimeAutoTssKey + 4);
            if (initialised && key && *initialised == 1 && *key < 1024) rt_.autoTssKey = *key;
        }
        std::set<uint64_t> seen;
        for (uint64_t interp = *head; interp; ) {
            if (seen.size() >= kMaxInterpreters || !seen.insert(interp).second) {
                rt_.notes.push_back("the interpreter list is cyclic or too long; stopped at " + hexAddress(interp));
                break;
            }
            Interpreter info;
            info.address = interp;
            info.main = interp == mainInterp;
            if (!readInterpreter(interp, &info, why)) {
                if (rt_.interpreters.empty()) return false;  // the head itself is bad: not a runtime
                rt_.notes.push_back("interpreter " + hexAddress(interp) + ": " + *why);
                break;
            }
            rt_.interpreters.push_back(std::move(info));
            interp = target_.readPointer(interp + l_.interpNext).value_or(0);
        }
        // Without _PyRuntime.interpreters.main: CPython gives the main interpreter id 0.
        if (l_.runtimeInterpretersMain == kAbsent)
            for (auto& i : rt_.interpreters) i.main = i.id == 0;
        rt_.initialised = true;
        return true;
    }

private:
    bool readInterpreter(uint64_t interp, Interpreter* info, std::string* why) {
        auto id = target_.readValue<int64_t>(interp + l_.interpId);
        auto threadsHead = target_.readPointer(interp + l_.interpThreadsHead);
        if (!id || !threadsHead) {
            *why = "unreadable PyInterpreterState at " + hexAddress(interp);
            return false;
        }
        if (l_.interpRuntime != kAbsent) {
            auto back = target_.readPointer(interp + l_.interpRuntime);
            if (!back || *back != rt_.address) {
                *why = "PyInterpreterState at " + hexAddress(interp) + " does not point back to _PyRuntime (" +
                       (back ? hexAddress(*back) : "unreadable") + ")";
                return false;
            }
        }
        info->id = *id;
        if (l_.interpDict != kAbsent) info->dict = target_.readPointer(interp + l_.interpDict).value_or(0);
        if (l_.interpBuiltins != kAbsent) info->builtins = target_.readPointer(interp + l_.interpBuiltins).value_or(0);
        readGil(interp, info);

        FrameReader frames(target_, l_);
        std::set<uint64_t> seen;
        uint64_t prev = 0;
        for (uint64_t ts = *threadsHead; ts;) {
            if (seen.size() >= kMaxThreadStates || !seen.insert(ts).second) {
                info->note = "the thread-state list is cyclic or too long; stopped at " + hexAddress(ts);
                break;
            }
            ThreadState t;
            t.address = ts;
            auto owner = target_.readPointer(ts + l_.tstateInterp);
            auto next = target_.readPointer(ts + l_.tstateNext);
            auto back = target_.readPointer(ts + l_.tstatePrev);
            if (!owner || !next || !back) {
                info->note = "thread state " + hexAddress(ts) + " is unreadable; the list ends there";
                break;
            }
            if (*owner != interp) {
                if (info->tstates.empty() && l_.interpRuntime == kAbsent) {
                    *why = "its first thread state does not point back to it";
                    return false;
                }
                info->note = "thread state " + hexAddress(ts) + " names interpreter " + hexAddress(*owner) + "; the list ends there";
                break;
            }
            if (*back != prev) t.note = "its prev pointer is " + hexAddress(*back) + ", expected " + hexAddress(prev);
            t.interp = *owner;
            if (l_.tstateId != kAbsent) t.id = target_.readValue<uint64_t>(ts + l_.tstateId);
            t.threadId = target_.readValue<uint64_t>(ts + l_.tstateThreadId).value_or(0);
            if (l_.tstateNativeThreadId != kAbsent) t.nativeThreadId = target_.readValue<int64_t>(ts + l_.tstateNativeThreadId);
            if (l_.tstateState != kAbsent) t.state = target_.readValue<int32_t>(ts + l_.tstateState);
            info->tstates.push_back(std::move(t));
            prev = ts;
            ts = *next;
        }
        // Their frames once the list is known: every state's innermost frame fetched at once (a
        // stopped process: one system call for a thousand threads, not one each).
        std::vector<std::pair<uint64_t, uint64_t>> top;
        for (const auto& t : info->tstates)
            if (uint64_t frame = frames.topFrame(t.address)) top.emplace_back(frame, frame + kFrameBytes);
        target_.prefetch(top);
        for (auto& t : info->tstates) {
            std::string frameNote;
            t.frames = frames.read(t.address, kMaxPythonFrames, &frameNote);  // whole: the analyses read it all
            if (!frameNote.empty()) t.note += (t.note.empty() ? "" : "; ") + frameNote;
        }
        return true;
    }

    void readGil(uint64_t interp, Interpreter* info) {
        std::optional<int32_t> locked;
        std::optional<uint64_t> holder;
        if (l_.interpCevalGil != kAbsent) {  // 3.12+: the GIL this interpreter uses
            uint64_t gil = target_.readPointer(interp + l_.interpCevalGil).value_or(0);
            // A free-threaded build runs without a GIL unless it was enabled at run time
            // (PYTHON_GIL=1, or an extension module not declaring Py_mod_gil).
            if (gil && l_.freeThreaded && l_.gilEnabled != kAbsent) {
                auto enabled = target_.readValue<int32_t>(gil + l_.gilEnabled);
                if (enabled && *enabled == 0) {
                    info->gilKnown = true;
                    info->gilDisabled = true;
                    return;
                }
            }
            if (gil) {
                locked = target_.readValue<int32_t>(gil + l_.gilLocked);
                holder = target_.readPointer(gil + l_.gilLastHolder);
            }
        } else if (l_.runtimeGilLocked != kAbsent) {  // <= 3.11: one GIL per runtime
            locked = target_.readValue<int32_t>(rt_.address + l_.runtimeGilLocked);
            holder = target_.readPointer(rt_.address + l_.runtimeGilLastHolder);
        }
        if (!locked || !holder) return;
        info->gilKnown = true;
        // last_holder is not cleared on release: it names the holder only while locked.
        if (!*locked) return;
        info->gilHolder = *holder;
        info->gilHolderSource = Interpreter::GilSource::LastHolder;
        // <= 3.11: gilstate.tstate_current is the state the holder runs (PyThreadState_Swap sets
        // it; take_gil alone writes last_holder). NULL between take_gil and the swap that follows
        // it, or when the holder swapped in no state: last_holder then.
        if (l_.runtimeTstateCurrent != kAbsent && rt_.tstateCurrent) {
            info->gilHolder = rt_.tstateCurrent;
            info->gilHolderSource = Interpreter::GilSource::TstateCurrent;
            if (*holder != rt_.tstateCurrent) info->gilTakenBy = *holder;
        }
    }

    const Target& target_;
    Runtime& rt_;
    const CPythonLayout& l_;
};

// Before 3.11 nothing exported names the micro version: sys.version of the main interpreter does.
void refineVersionFromSys(const Target& target, Runtime& rt) {
    for (const auto& interp : rt.interpreters) {
        if (!interp.main) continue;
        uint64_t sysdict = rt.layout.interpSysdict == kAbsent ? 0 : target.readPointer(interp.address + rt.layout.interpSysdict).value_or(0);
        auto entries = readPyDict(target, rt.layout, sysdict);
        if (!entries) return;
        for (const auto& e : *entries) {
            if (readPyUnicode(target, rt.layout, e.key, 64).value_or("") != "version") continue;
            std::string v = readPyUnicode(target, rt.layout, e.value, 256).value_or("");
            static const std::regex leading(R"(^(3\.\d+\.\d+\S*))");
            std::smatch m;
            if (std::regex_search(v, m, leading) && m[1].str().rfind(rt.version + ".", 0) == 0) rt.version = m[1];
            return;
        }
    }
}

}  // namespace

std::string versionFromHex(uint32_t hex) {
    unsigned major = hex >> 24, minor = (hex >> 16) & 0xff, micro = (hex >> 8) & 0xff, level = (hex >> 4) & 0xf,
             serial = hex & 0xf;
    std::string v = std::to_string(major) + "." + std::to_string(minor);
    if (hex & 0xffff) v += "." + std::to_string(micro);
    if (level == 0xa) v += "a" + std::to_string(serial);
    if (level == 0xb) v += "b" + std::to_string(serial);
    if (level == 0xc) v += "rc" + std::to_string(serial);
    return v;
}

RuntimeCandidates findRuntimeCandidates(const Target& target, bool useDwarf) {
    RuntimeCandidates result;
    const auto& modules = target.modules();
    for (size_t i = 0; i < modules.size(); ++i) {
        const LoadedModule& module = modules[i];
        auto sym = findModuleSymbol(module, "_PyRuntime");
        if (!sym || sym->type != STT_OBJECT) continue;
        Runtime rt;
        rt.address = module.bias + sym->value;
        rt.moduleIndex = i;
        rt.modulePath = module.path;
        auto versionHex = detectVersionHex(target, module, rt.address);
        if (!versionHex) {
            result.rejected.push_back(module.path + ": _PyRuntime at " + hexAddress(rt.address) + ": the CPython version is unknown");
            continue;
        }
        rt.versionHex = *versionHex;
        rt.version = versionFromHex(*versionHex);
        int minor = static_cast<int>((*versionHex >> 16) & 0xff);
        std::string refused;
        rt.layout = layoutFor(target, rt.address, minor, module, useDwarf, &rt.notes, &refused);
        if (rt.layout.source.empty()) {
            result.rejected.push_back(module.path + ": CPython " + rt.version + " is not supported: " + refused);
            continue;
        }
        if (minor >= 12) findTssTstate(target, module, minor, useDwarf, rt);
        if (minor >= 15) findTssGilstate(target, module, useDwarf, rt);
        result.candidates.push_back(std::move(rt));
    }
    return result;
}

RuntimeSearch walkRuntimes(const Target& target, const RuntimeCandidates& candidates) {
    RuntimeSearch result;
    result.rejected = candidates.rejected;
    for (const Runtime& candidate : candidates.candidates) {
        Runtime rt = candidate;
        std::string why;
        Walker walker(target, rt);
        if (!walker.walk(&why)) {
            result.rejected.push_back(rt.modulePath + ": _PyRuntime at " + hexAddress(rt.address) + " (CPython " + rt.version + "): " + why);
            continue;
        }
        if (!(rt.versionHex & 0xffff)) refineVersionFromSys(target, rt);
        result.runtimes.push_back(std::move(rt));
    }
    return result;
}

RuntimeSearch findRuntimes(const Target& target) {
    return walkRuntimes(target, findRuntimeCandidates(target, true));
}

}  // namespace pytstates
