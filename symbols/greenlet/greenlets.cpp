// SPDX-License-Identifier: Apache-2.0
#include "symbols/greenlet/greenlets.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "symbols/cpython/gc_objects.h"
#include "symbols/cpython/python_objects.h"
#include "symbols/cpython/stack_walker.h"
#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"
#include "symbols/glibc/malloc_chunk.h"
#include "symbols/glibc/thread_local.h"
#include "symbols/modules/debug_session.h"
#include "symbols/text/base_name.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

constexpr uint64_t kMainStackStop = ~uint64_t(0);  // greenlet marks a main greenlet with stack_stop == (char*)-1
constexpr uint64_t kMaxTlsBlock = 512;             // _greenlet's TLS block is 16 bytes in 2.x and 3.x
constexpr size_t kMaxTypeChain = 64;

bool isGreenletModule(const std::string& path) {
    std::string name = baseName(path);
    return name.rfind("_greenlet", 0) == 0 && name.find(".so") != std::string::npos;
}

// greenlet.__version__ through sys.modules of the main interpreter.
std::string greenletVersion(const Target& target, const Runtime& rt) {
    const CPythonLayout& l = rt.layout;
    if (l.interpSysdict == kAbsent) return {};
    for (const auto& interp : rt.interpreters) {
        if (!interp.main) continue;
        uint64_t sysdict = target.readPointer(interp.address + l.interpSysdict).value_or(0);
        auto modules = lookupPyDict(target, l, sysdict, "modules");
        auto package = modules ? lookupPyDict(target, l, *modules, "greenlet") : std::nullopt;
        uint64_t dict = package ? target.readPointer(*package + l.moduleDict).value_or(0) : 0;
        auto version = lookupPyDict(target, l, dict, "__version__");
        return version ? readPyUnicode(target, l, *version, 32).value_or("") : "";
    }
    return {};
}

class Scanner {
public:
    Scanner(const Target& target, const Runtime& rt, const LoadedModule& module, const GreenletLayout& layout)
        : target_(target), rt_(rt), module_(module), g_(layout), walker_(target, rt.layout), frames_(walker_.frames()) {}

    // A main greenlet pointing back at this ThreadState through its implementation.
    bool isThreadState(uint64_t ts, uint64_t* main) const {
        if (ts < 4096) return false;
        uint64_t m = read(ts + g_.threadStateMain);
        uint64_t impl = m ? read(m + g_.pimpl) : 0;
        if (!impl || read(impl + g_.selfPointer) != m || read(impl + g_.stackStop) != kMainStackStop) return false;
        if (read(impl + g_.mainThreadState) != ts) return false;
        *main = m;
        return true;
    }

    void findThreads(const GlibcKeys* glibc, GreenletScan* scan) const {
        auto tls = module_.elf ? module_.elf->tlsSegment() : std::nullopt;
        if (!tls || !glibc) {
            scan->problem = !glibc ? "glibc's thread data is unknown: greenlets are not tied to threads"
                                   : "the _greenlet module has no TLS segment: greenlets are not tied to threads";
            return;
        }
        uint64_t size = std::min<uint64_t>(tls->memsz, kMaxTlsBlock);
        for (const auto& t : target_.threads()) {
            for (uint64_t offset = 0; offset + 8 <= size; offset += 8) {
                ThreadLocal tl = readThreadLocal(target_, *glibc, module_, offset, t);
                if (tl.status == ThreadLocal::Status::NotAllocated) break;  // this thread never used greenlet
                uint64_t main = 0;
                if (tl.status != ThreadLocal::Status::Value || !isThreadState(tl.value, &main)) continue;
                GreenletThread gt;
                gt.lwp = t.lwp;
                gt.threadState = tl.value;
                gt.mainGreenlet = main;
                gt.currentGreenlet = read(tl.value + g_.threadStateCurrent);
                scan->threads.push_back(gt);
                break;
            }
        }
    }

    // Every frame on a thread state's live stack, with its thread state: a suspended greenlet's
    // saved frame must be on none of them.
    void findLiveFrames() {
        for (const auto& interp : rt_.interpreters)
            for (const auto& ts : interp.tstates)
                for (const auto& f : frames_.read(ts.address, kMaxPythonFrames, nullptr)) liveFrames_.emplace(f.address, ts.address);
    }

    // The type is greenlet's (greenlet.greenlet of this module) or derives from it.
    bool isGreenletType(uint64_t type) {
        auto it = typeCache_.find(type);
        if (it != typeCache_.end()) return it->second;
        bool is = false;
        uint64_t t = type;
        for (size_t depth = 0; t && depth < kMaxTypeChain && !is; ++depth) {
            if (t >= module_.start && t < module_.end) {
                uint64_t name = read(t + rt_.layout.typeName);
                is = name && target_.readCString(name, 32).value_or("") == "greenlet.greenlet";
            }
            t = read(t + rt_.layout.typeBase);
        }
        typeCache_[type] = is;
        return is;
    }

    // Main greenlets are told by their class's vtable, learnt from those whose stack_stop still
    // says "main" ((char*)-1): greenlet zeroes the stack state of a main greenlet whose thread
    // ended once anything asks whether it is dead.
    void learnMainClass(const std::vector<uint64_t>& greenlets, const GreenletScan& scan) {
        for (const auto& t : scan.threads) mainVtables_.insert(read(read(t.mainGreenlet + g_.pimpl)));
        for (uint64_t object : greenlets) {
            uint64_t impl = read(object + g_.pimpl);
            if (impl && read(impl + g_.stackStop) == kMainStackStop) mainVtables_.insert(read(impl));
        }
        mainVtables_.erase(0);
    }

    bool isMain(uint64_t impl) const {
        if (mainVtables_.empty()) return read(impl + g_.stackStop) == kMainStackStop;
        return mainVtables_.count(read(impl)) != 0;
    }

    void describe(uint64_t object, uint64_t type, uint64_t interp, GreenletScan* scan) {
        uint64_t impl = read(object + g_.pimpl);
        if (!impl || read(impl + g_.selfPointer) != object) {
            ++scan->rejected;
            return;
        }
        GreenletInfo info;
        info.address = object;
        info.interp = interp;
        uint64_t name = read(type + rt_.layout.typeName);
        info.typeName = name ? target_.readCString(name, 128).value_or("?") : "?";
        uint64_t stackStart = read(impl + g_.stackStart), stackStop = read(impl + g_.stackStop);
        info.main = isMain(impl);
        const GreenletThread* thread = nullptr;
        // greenlet's was_running_in_dead_thread(): the main greenlet's thread state is gone.
        bool threadEnded = false;
        if (info.main) {
            uint64_t ts = read(impl + g_.mainThreadState);
            for (const auto& t : scan->threads)
                if (t.threadState == ts && t.mainGreenlet == object) thread = &t;
            threadEnded = !ts;
        } else {
            uint64_t main = read(impl + g_.userMainGreenlet);
            info.parent = read(impl + g_.userParent);
            for (const auto& t : scan->threads)
                if (main && t.mainGreenlet == main) thread = &t;
            uint64_t mainImpl = main ? read(main + g_.pimpl) : 0;
            threadEnded = !thread && mainImpl && isMain(mainImpl) && !read(mainImpl + g_.mainThreadState);
        }
        if (thread) info.lwp = thread->lwp;
        if (threadEnded) info.note = "its thread has ended";
        if (thread && thread->currentGreenlet == object) info.state = "running";
        else if (!threadEnded && (info.main || stackStart)) info.state = "suspended";
        else if (threadEnded || stackStop) info.state = "dead";  // a thread that ended: as greenlet says of it (greenlet.dead)
        else info.state = "unstarted";
        if (info.state == "suspended") {
            info.savedFrameObject = g_.topFrame >= 0 ? read(impl + g_.topFrame) : 0;
            info.savedFrame = g_.currentFrame >= 0 && rt_.layout.minor >= 11 ? read(impl + g_.currentFrame) : info.savedFrameObject;
            checkSavedFrame(&info);
            std::string note;
            info.frames = walker_.fromFrame(info.savedFrame, 0, kMaxPythonFrames, &note);  // whole, as a thread state's
            if (!note.empty()) info.note = note;
        }
        scan->greenlets.push_back(std::move(info));
    }

private:
    uint64_t read(uint64_t address) const { return target_.readPointer(address).value_or(0); }

    // What memory shows at a pointer that should be a frame and is not: only what is seen.
    std::string whatIsAt(uint64_t p) const {
        if (!target_.readPointer(p)) return "is unreadable";
        if (looksLikeFreedTcacheEntry(target_, p)) return "reads as a glibc tcache free-list entry: likely freed";
        if (looksLikeFreedBinChunk(target_, p)) return "lies in a malloc chunk marked free: likely freed";
        if (auto type = readPlausibleTypeName(target_, rt_.layout, p)) return "holds a Python '" + *type + "' object, not a frame";
        return "holds no frame";
    }

    void checkSavedFrame(GreenletInfo* info) {
        auto live = liveFrames_.find(info->savedFrame);
        if (info->savedFrame && live != liveFrames_.end()) info->savedFrameOnTstate = live->second;
        if (info->savedFrame && !frames_.looksLikeFrame(info->savedFrame)) {
            info->savedFrameProblem = "its saved frame " + hexAddress(info->savedFrame) + " " + whatIsAt(info->savedFrame);
        } else if (info->savedFrameObject && readTypeName(target_, rt_.layout, info->savedFrameObject).value_or("") != "frame") {
            info->savedFrameObjectProblem = "its saved frame object " + hexAddress(info->savedFrameObject) + " " + whatIsAt(info->savedFrameObject);
        }
    }

    const Target& target_;
    const Runtime& rt_;
    const LoadedModule& module_;
    const GreenletLayout& g_;
    StackWalker walker_;   // one for all greenlets: it remembers which types are code objects
    FrameReader& frames_;
    std::unordered_map<uint64_t, bool> typeCache_;
    std::unordered_map<uint64_t, uint64_t> liveFrames_;  // frame -> thread state whose live stack holds it
    std::set<uint64_t> mainVtables_;                     // MainGreenlet's vtable (one per loaded module)
};

// A greenlet not started yet has no main greenlet: greenlet ties it to its parent's thread (a
// parent must belong to the same thread), and so does this.
void inheritThreads(GreenletScan* scan) {
    std::unordered_map<uint64_t, const GreenletInfo*> byAddress;
    for (const auto& g : scan->greenlets) byAddress[g.address] = &g;
    for (auto& g : scan->greenlets) {
        if (g.lwp || g.main) continue;
        uint64_t parent = g.parent;
        for (size_t depth = 0; parent && depth < kMaxTypeChain; ++depth) {
            auto it = byAddress.find(parent);
            if (it == byAddress.end()) break;
            if (it->second->lwp) {
                g.lwp = it->second->lwp;
                break;
            }
            parent = it->second->parent;
        }
    }
}

}  // namespace

std::vector<GreenletModule> findGreenletModules(const Target& target, bool useDwarf) {
    std::vector<GreenletModule> found;
    const auto& modules = target.modules();
    for (size_t i = 0; i < modules.size(); ++i) {
        const LoadedModule& mod = modules[i];
        if (!isGreenletModule(mod.path)) continue;
        GreenletModule g;
        g.moduleIndex = i;
        if (useDwarf)
            if (DwarfTypes* dwarf = target.dwarfTypes(mod))
                g.dwarf = greenletLayoutFromDwarf(*dwarf);
        found.push_back(std::move(g));
    }
    return found;
}

std::optional<GreenletScan> scanGreenlets(const Target& target, const GlibcKeys* glibc, const Runtime& rt,
                                          size_t runtimeIndex, const std::vector<GreenletModule>& modules) {
    // The module built for this runtime's minor ("cpython-311") when several are loaded.
    const GreenletModule* chosen = nullptr;
    std::string tag = "cpython-3" + std::to_string(rt.layout.minor);
    for (const auto& m : modules) {
        const std::string& path = target.modules()[m.moduleIndex].path;
        if (!chosen || baseName(path).find(tag) != std::string::npos) chosen = &m;
    }
    if (!chosen) return std::nullopt;
    const LoadedModule& module = target.modules()[chosen->moduleIndex];
    GreenletScan scan;
    scan.runtimeIndex = runtimeIndex;
    scan.module = module.path;
    scan.version = greenletVersion(target, rt);
    std::optional<GreenletLayout> layout = chosen->dwarf;
    if (!layout) layout = greenletLayoutTable(scan.version, rt.layout.minor);
    if (!layout) {
        scan.problem = "greenlet " + (scan.version.empty() ? std::string("of unknown version") : scan.version) +
                       " on CPython 3." + std::to_string(rt.layout.minor) +
                       " has no DWARF and no built-in layout (built in: " + greenletTablesCovered() +
                       "): its greenlets are not listed";
        return scan;
    }
    scan.layoutSource = layout->source;
    Scanner scanner(target, rt, module, *layout);
    scanner.findThreads(glibc, &scan);
    scanner.findLiveFrames();
    struct Found {
        uint64_t object, type, interp;
    };
    std::vector<Found> found;
    for (const auto& interp : rt.interpreters) {
        uint64_t gcState = rt.layout.gcInRuntime ? rt.address : interp.address;
        GcWalk walk = walkGcObjects(target, rt.layout, gcState, [&](uint64_t object, uint64_t type) {
            if (type && scanner.isGreenletType(type)) found.push_back({object, type, interp.address});
        });
        scan.gcObjects += walk.objects;
        if (!walk.problem.empty() && scan.problem.empty()) scan.problem = walk.problem;
        if (rt.layout.gcInRuntime) break;  // 3.8: one collector for the whole runtime
    }
    std::vector<uint64_t> objects;
    objects.reserve(found.size());
    for (const auto& f : found) objects.push_back(f.object);
    scanner.learnMainClass(objects, scan);
    for (const auto& f : found) scanner.describe(f.object, f.type, f.interp, &scan);
    inheritThreads(&scan);
    if (scan.greenlets.empty() && scan.rejected) {
        scan.problem = "the greenlet " + scan.version + " layout (" + scan.layoutSource + ") does not fit: none of " +
                       std::to_string(scan.rejected) + (scan.rejected == 1 ? " object" : " objects") +
                       " of greenlet's type points back from its implementation";
    }
    return scan;
}

}  // namespace pytstates
