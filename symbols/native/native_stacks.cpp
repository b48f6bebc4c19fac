// SPDX-License-Identifier: Apache-2.0
#include "symbols/native/native_stacks.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "symbols/cpython/frames.h"
#include "symbols/elf/elf_file.h"
#include "symbols/elf/type_cache.h"
#include "symbols/modules/debug_session.h"
#include "symbols/modules/module_files.h"
#include "symbols/native/dwarf_values.h"
#include "symbols/native/function_names.h"
#include "symbols/native/line_tables.h"
#include "symbols/native/source_line.h"
#include "symbols/native/sp_unwinder.h"
#include "symbols/native/symbol_index.h"

namespace pytstates {

namespace {

constexpr size_t kMaxPhysicalFrames = 1024;  // a deeper stack is corrupt or recursing without end
constexpr size_t kMaxStackWords = 64;       // words of one frame scanned for a pointer
constexpr int kMaxScopeSearch = 1 << 20;    // DIEs visited to find the functions at one pc
constexpr int kMaxTailCalls = 3;            // tail calls followed between a frame and its caller

// One frame as the unwinder gave it, before symbolization.
struct RawFrame {
    uint64_t pc = 0;
    uint64_t sp = 0;  // 0 when the unwinder does not know it
    bool activation = false;
    std::vector<std::optional<uint64_t>> registers;  // by DWARF number; only for the frames asked for
};

// One function at a pc: the frame itself or an inlined call in it.
// The chain of DIEs below `parent` whose PC ranges hold `pc` (functions, inlined calls, lexical
// blocks). Other DIEs are looked through: namespaces and classes hold C++ definitions, and a
// function holds those of its local classes (a lambda's operator() sits in its closure type, inside
// the function that defines the lambda, whatever code that function has). Done by hand: dwarf_getscopes gives up on inlined calls whose abstract
// origin is in another unit (GCC's LTO output, such as Debian's libpython).
bool findPath(Dwarf_Die* parent, Dwarf_Addr pc, std::vector<Dwarf_Die>* path, int* budget) {
    Dwarf_Die child, match;
    bool matched = false;
    if (dwarf_child(parent, &child) != 0) return false;
    do {
        if (--*budget < 0) break;
        int tag = dwarf_tag(&child);
        bool code = tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block;
        bool container = code || tag == DW_TAG_namespace || tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
                         tag == DW_TAG_union_type;
        if (!container) continue;
        bool hasCode = dwarf_hasattr(&child, DW_AT_low_pc) || dwarf_hasattr(&child, DW_AT_ranges);
        if (code && hasCode && dwarf_haspc(&child, pc) > 0) {
            // Several DIEs for one piece of code (an assembler function's aliases): the last
            // one names it, as gdb's backtrace does.
            match = child;
            matched = true;
            continue;
        }
        // Code elsewhere, or no code: a local class inside may still define the function.
        if (!matched && dwarf_haschildren(&child) && findPath(&child, pc, path, budget)) return true;
    } while (dwarf_siblingof(&child, &child) == 0);
    if (!matched) return false;
    path->push_back(match);
    findPath(&match, pc, path, budget);
    return true;
}

struct Symbolized {
    std::string function, file;
    int line = 0;
    bool inlined = false;
    bool haveScope = false;
    Dwarf_Die scope{};      // DW_TAG_subprogram or DW_TAG_inlined_subroutine
    Dwarf_Die subprogram{};  // the concrete function the frame runs (for its frame base)
};

struct Symbolization {
    const LoadedModule* module = nullptr;
    Dwfl_Module* dwflModule = nullptr;
    Dwarf_Addr dwarfBias = 0;
    std::vector<Symbolized> chain;  // innermost (inlined) first, the physical function last
};

std::string fileName(Dwarf_Die* cu, Dwarf_Word index) {
    Dwarf_Files* files;
    size_t count;
    if (dwarf_getsrcfiles(cu, &files, &count) != 0 || index >= count) return {};
    const char* name = dwarf_filesrc(files, index, nullptr, nullptr);
    return name ? name : "";
}

// The DIE that declares a function: through DW_AT_abstract_origin (an inlined or out-of-line
// instance) and DW_AT_specification (a definition outside its class) to the declaration, whose
// parents are the function's namespaces and classes.
Dwarf_Die declarationOf(Dwarf_Die die) {
    for (int guard = 0; guard < 8; ++guard) {
        Dwarf_Attribute attr;
        Dwarf_Die next;
        if ((dwarf_attr(&die, DW_AT_abstract_origin, &attr) || dwarf_attr(&die, DW_AT_specification, &attr)) &&
            dwarf_formref_die(&attr, &next))
            die = next;
        else
            break;
    }
    return die;
}

// The name a backtrace shows for a subprogram or inlined subroutine DIE: its linkage name
// demangled, or its name qualified by the namespaces and classes that declare it.
std::string dieFunctionName(Dwarf_Die* die) {
    Dwarf_Attribute attr;
    const char* linkage = nullptr;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) || dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
        linkage = dwarf_formstring(&attr);
    if (linkage) return functionName(linkage);
    const char* name = dwarf_attr_integrate(die, DW_AT_name, &attr) ? dwarf_formstring(&attr) : nullptr;
    if (!name) return {};
    std::string qualified = name;
    Dwarf_Die decl = declarationOf(*die);
    Dwarf_Die* parents = nullptr;
    int n = dwarf_getscopes_die(&decl, &parents);
    for (int i = 1; i < n; ++i) {
        int tag = dwarf_tag(&parents[i]);
        if (tag != DW_TAG_namespace && tag != DW_TAG_structure_type && tag != DW_TAG_class_type && tag != DW_TAG_union_type)
            continue;
        const char* scope = dwarf_diename(&parents[i]);
        if (!scope && tag != DW_TAG_namespace) break;  // a lambda's closure type: no name to show, nor beyond it
        qualified.insert(0, std::string(scope ? scope : "(anonymous namespace)").append("::"));
    }
    std::free(parents);
    return qualified;
}

}  // namespace

namespace {

NativeFrame frameOf(const Symbolization& s, const Symbolized& f, uint64_t pc, bool activation) {
    NativeFrame out;
    out.pc = pc;
    out.activation = activation;
    out.inlined = f.inlined;
    out.function = f.function;
    out.file = f.file;
    out.line = f.line;
    if (s.module) {
        out.module = s.module->path;
        out.offset = pc - s.module->bias;
    }
    return out;
}

}  // namespace

struct NativeStacks::Impl {
    const Target& target;
    const DebugSession& session;
    bool useDwarf;
    Dwfl* dwfl = nullptr;
    const OsThread* current = nullptr;
    size_t registersDepth = 0;
    size_t physicalLimit = kMaxPhysicalFrames;  // unwind no deeper than the caller will look
    std::vector<RawFrame>* frames = nullptr;
    std::unordered_map<uint64_t, Symbolization> cache;        // by lookup address
    std::unordered_map<uint64_t, Symbolization> symbolCache;  // the same from symbol tables alone
    std::unordered_map<int, std::vector<StackSpan>> spansOf;   // by LWP
    std::set<int> cutShort;                                     // LWPs whose spans stop before their stack's end
    std::map<std::pair<const Symbolization*, uint64_t>, std::vector<NativeFrame>> tailCache;  // (callee, caller pc)
    SpUnwinder quick;  // the first frames of many threads by the CFI rules each pc has (firstFrames)
    std::map<std::vector<uint64_t>, std::vector<NativeFrame>> firstFramesOf;  // by the pcs (firstFrames)

    Impl(const Target& t, bool dwarf)
        : target(t), session(t.debugSession(dwarf)), useDwarf(dwarf), dwfl(session.dwfl()), quick(dwfl, t) {}
    ~Impl() {
        if (session.threadArg() == this) session.threadArg() = nullptr;
        for (const auto& [mod, cached] : symbolAnswers)
            if (cached.dirty) storeAnswers("symbols", cached.buildId, cached.identity, cached.answers);
    }

    // Names from the symbol tables kept on disk per module file (symbols/elf/type_cache.h), by the
    // pc's offset in the module: a later run on a core of the same build reads no symbol table.
    struct SymbolAnswers {
        bool usable = false;
        bool dirty = false;
        std::string buildId, identity;
        TypeAnswers answers;  // offset -> name ("-": none)
    };
    std::map<Dwfl_Module*, SymbolAnswers> symbolAnswers;
    SymbolAnswers& symbolAnswersOf(Dwfl_Module* mod, const LoadedModule* module) {
        auto known = symbolAnswers.find(mod);
        if (known != symbolAnswers.end()) return known->second;
        SymbolAnswers& a = symbolAnswers[mod];
        if (!module || !module->elf || module->elf->buildId().empty() || !typeCacheEnabled()) return a;
        // The table libdwfl names functions from: the module's own or a debug file's (found or
        // not, asked for or not), and how many symbols it has.
        int count = dwfl_module_getsymtab(mod);
        Elf* from = nullptr;
        GElf_Sym sym;
        GElf_Addr addr = 0;
        Dwarf_Addr bias = 0;
        if (count <= 1 || !dwfl_module_getsym_info(mod, count - 1, &sym, &addr, nullptr, &from, nullptr) || !from) return a;
        bool own = from == dwfl_module_getelf(mod, &bias);
        a.buildId = module->elf->buildId();
        a.identity = std::to_string(module->elf->fileSize()) + " " + (own ? "own" : "debug") + " " + std::to_string(count);
        if (auto loaded = loadAnswers("symbols", a.buildId, a.identity)) a.answers = std::move(*loaded);
        a.usable = true;
        return a;
    }

    static Impl* self(void* arg) { return static_cast<Impl*>(*static_cast<void**>(arg)); }

    // libdwfl hands threadArg back to setInitialRegisters: this unwinder, whose current thread
    // it is, so that the registers are set by the target's machine.
    static pid_t nextThread(Dwfl*, void* arg, void** threadArg) {
        Impl* self = Impl::self(arg);
        if (*threadArg || !self->current) return 0;  // one thread per unwind
        *threadArg = self;
        return self->current->lwp;
    }
    static bool getThread(Dwfl*, pid_t tid, void* arg, void** threadArg) {
        Impl* self = Impl::self(arg);
        if (!self->current || self->current->lwp != tid) return false;
        *threadArg = self;
        return true;
    }
    static bool memoryRead(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
        Impl* self = Impl::self(arg);
        auto v = self->target.readValue<uint64_t>(addr);
        if (!v) return false;
        *result = *v;
        return true;
    }
    static bool setInitialRegisters(Dwfl_Thread* thread, void* threadArg) {
        const auto* self = static_cast<const Impl*>(threadArg);
        const OsThread* t = self->current;
        if (!t || t->registers.size() < 2) return false;
        // The pc is the last DWARF register of both machines. x86_64's rip (16) is also the
        // return address column, which CFI may read: the PLT's CFA is rsp + 8, or + 16 after the
        // lazy binding's push, chosen by rip (DW_OP_breg16), so it is set like the others (as
        // elfutils' own x86_64 backend does). aarch64's pc is no DWARF register libdwfl keeps:
        // every other one, then the pc.
        const Arch& arch = self->target.arch();
        bool pcIsRegister = arch.machine == Machine::X86_64 && t->registers.size() == arch.dwarfRegisters &&
                            arch.pcRegister + 1 == arch.dwarfRegisters;
        std::vector<Dwarf_Word> regs(t->registers.begin(), t->registers.end() - (pcIsRegister ? 0 : 1));
        if (pcIsRegister) regs.back() = t->pc;
        if (!dwfl_thread_state_registers(thread, 0, static_cast<unsigned>(regs.size()), regs.data())) return false;
        dwfl_thread_state_register_pc(thread, t->pc);
        return true;
    }

    static int onFrame(Dwfl_Frame* state, void* arg) {
        auto* self = static_cast<Impl*>(arg);
        RawFrame f;
        Dwarf_Addr pc;
        bool activation = false;
        if (!dwfl_frame_pc(state, &pc, &activation)) return DWARF_CB_ABORT;
        // libdwfl hands an aarch64 return address on as saved, signed where pointer
        // authentication signed it: the frame is named by the code it returns to.
        f.pc = self->target.arch().codeAddress(pc);
        f.activation = activation;
        Dwarf_Word sp;
        if (dwfl_frame_reg(state, self->target.arch().spRegister, &sp) == 0) f.sp = sp;
        if (self->frames->size() < self->registersDepth) {
            const Arch& arch = self->target.arch();
            f.registers.resize(arch.dwarfRegisters);
            for (unsigned r = 0; r < arch.dwarfRegisters; ++r) {
                Dwarf_Word v;
                if (dwfl_frame_reg(state, r, &v) == 0) f.registers[r] = v;
            }
            // elfutils' x86_64 ABI rules (backends/x86_64_cfi.c) mark DWARF register 0 (rax) as kept
            // across calls where rbx (3) is meant: a caller's rax is then its callee's, and its rbx,
            // when the callee's CFI says nothing of it (the callee left it alone), is lost. Said as
            // the psABI has it: rbx is callee-saved, rax is not. (glibc 2.41's rwlock waits keep the
            // rwlock in rbx.)
            if (arch.machine == Machine::X86_64 && !self->frames->empty() && !activation) {
                const RawFrame& callee = self->frames->back();
                f.registers[0].reset();
                if (!f.registers[3] && callee.registers.size() > 3 && callee.registers[3]) f.registers[3] = callee.registers[3];
            }
        }
        self->frames->push_back(std::move(f));
        return self->frames->size() >= self->physicalLimit ? DWARF_CB_ABORT : DWARF_CB_OK;
    }

    // What physical frame i holds: its DWARF parameters (and those of the calls inlined at its
    // pc), its registers, the words of its stack frame.
    void addValues(const std::vector<RawFrame>& raw, size_t i, const Symbolization& s, std::vector<NativeFrame>& frames,
                   size_t firstOfFrame) {
        const RawFrame& r = raw[i];
        FrameContext ctx = contextOf(raw, i, s);
        for (size_t k = firstOfFrame, c = 0; k < frames.size() && c < s.chain.size(); ++k, ++c)
            if (useDwarf && s.chain[c].haveScope) parameterValues(ctx, s.chain[c].scope, s.chain[c].subprogram, &frames[k].values);
        NativeFrame& physical = frames.back();
        for (unsigned reg = 0; reg < r.registers.size(); ++reg)
            if (r.registers[reg] && reg != ctx.arch->pcRegister)
                physical.values.push_back({FrameValue::Kind::Register, ctx.arch->registerName(reg), *r.registers[reg]});
        auto sp = r.registers.size() > ctx.arch->spRegister ? r.registers[ctx.arch->spRegister] : std::nullopt;
        if (sp && ctx.cfa && *ctx.cfa >= *sp + 8) {
            size_t words = std::min<uint64_t>((*ctx.cfa - *sp) / 8, kMaxStackWords);
            std::vector<uint64_t> buf(words);
            size_t got = target.read(*sp, buf.data(), words * 8) / 8;
            for (size_t w = 0; w < got; ++w) {
                char name[32];
                std::snprintf(name, sizeof name, "[sp+0x%zx]", w * 8);
                physical.values.push_back({FrameValue::Kind::StackWord, name, buf[w]});
            }
        }
    }

    // Physical frame i's registers, its CFA and its caller, for evaluating its DWARF locations.
    FrameContext contextOf(const std::vector<RawFrame>& raw, size_t i, const Symbolization& s) {
        const RawFrame& r = raw[i];
        FrameContext ctx;
        ctx.arch = &target.arch();
        ctx.memory = &target;
        ctx.registers = r.registers;
        if (i + 1 < raw.size() && !raw[i + 1].registers.empty()) ctx.cfa = raw[i + 1].registers[ctx.arch->spRegister];
        ctx.dwarfBias = s.dwarfBias;
        ctx.pc = (r.activation ? r.pc : r.pc - 1) - s.dwarfBias;
        if (i + 1 < raw.size()) {
            ctx.callerReturnAddress = raw[i + 1].pc;
            const Symbolization& caller = symbolize(raw[i + 1].activation ? raw[i + 1].pc : raw[i + 1].pc - 1);
            if (!caller.chain.empty() && caller.chain.back().haveScope) {
                ctx.callerSubprogram = caller.chain.back().subprogram;
                ctx.haveCaller = true;
                ctx.callerRegisters = raw[i + 1].registers;
                ctx.callerDwarfBias = caller.dwarfBias;
                if (i + 2 < raw.size() && !raw[i + 2].registers.empty()) ctx.callerCfa = raw[i + 2].registers[ctx.arch->spRegister];
            }
        }
        return ctx;
    }

    // The frame a debugger shows for a tail call between a frame and its caller: a jump leaves
    // no return address, but the caller's call site names the function it called, and when that
    // is not the function running below, a tail call site in it to that function explains the
    // gap (gdb's "tail call frames"). One level.
    std::vector<NativeFrame> tailCall(const Symbolization& callee, const RawFrame& callerRaw) {
        if (!useDwarf || callee.chain.empty() || callerRaw.activation) return {};
        auto key = std::make_pair(&callee, callerRaw.pc);  // symbolizations live as long as the cache
        auto it = tailCache.find(key);
        if (it != tailCache.end()) return it->second;
        return tailCache[key] = findTailCalls(callee, callerRaw);
    }

    std::vector<NativeFrame> findTailCalls(const Symbolization& callee, const RawFrame& callerRaw) {
        const Symbolization& caller = symbolize(callerRaw.pc - 1);
        if (caller.chain.empty() || !caller.chain.back().haveScope || !caller.module) return {};
        Dwarf_Die callerSub = caller.chain.back().subprogram, site, origin;
        if (!findCallSite(&callerSub, callerRaw.pc - caller.dwarfBias, &site) || !callSiteOrigin(&site, &origin)) return {};
        std::string called = dieFunctionName(&origin);
        const std::string& running = callee.chain.back().function;
        if (called.empty() || running.empty() || called == running) return {};
        // Where the called function's code is: its symbol, in the module running below (a call
        // through the PLT into a library) or in the caller's own.
        auto entry = entryOf({callee.module, caller.module}, &origin);
        if (!entry) return {};
        const Symbolization& target = symbolize(*entry);
        if (target.chain.empty() || !target.chain.back().haveScope) return {};
        std::vector<NativeFrame> chain;
        if (!tailCallsTo(target, called, running, kMaxTailCalls, &chain)) return {};
        return chain;
    }

    // The tail calls that lead from `function` (symbolized at its entry as `at`) to `running`:
    // its tail call sites, followed through up to `depth` functions; innermost frame first.
    bool tailCallsTo(const Symbolization& at, const std::string& function, const std::string& running, int depth,
                     std::vector<NativeFrame>* out) {
        if (at.chain.empty() || !at.chain.back().haveScope || depth <= 0) return false;
        Dwarf_Die sub = at.chain.back().subprogram;
        for (Dwarf_Die tail : tailCallSites(&sub)) {
            Dwarf_Die origin;
            auto returnPc = callSiteReturnPc(&tail);
            if (!returnPc || !callSiteOrigin(&tail, &origin)) continue;
            uint64_t pc = *returnPc + at.dwarfBias;
            const Symbolization& where = symbolize(pc - 1);
            if (where.chain.empty()) continue;
            // Named as gdb names it: the innermost function at the tail call (an inlined one, if
            // the jump is in one), with that line.
            NativeFrame frame = frameOf(where, where.chain.front(), pc, false);
            frame.inlined = false;
            frame.tailCall = true;
            if (frame.function.empty()) frame.function = function;
            std::string next = dieFunctionName(&origin);
            if (next == running) {
                out->push_back(frame);
                return true;
            }
            auto entry = entryOf({at.module}, &origin);
            if (entry && tailCallsTo(symbolize(*entry), next, running, depth - 1, out)) {
                out->push_back(frame);
                return true;
            }
        }
        return false;
    }

    // Where a function's code starts, from its symbol in the first of `modules` that defines it.
    std::optional<uint64_t> entryOf(std::initializer_list<const LoadedModule*> modules, Dwarf_Die* function) {
        Dwarf_Attribute attr;
        const char* symbol = nullptr;
        if (dwarf_attr_integrate(function, DW_AT_linkage_name, &attr)) symbol = dwarf_formstring(&attr);
        if (!symbol && dwarf_attr_integrate(function, DW_AT_name, &attr)) symbol = dwarf_formstring(&attr);
        if (!symbol) return std::nullopt;
        for (const LoadedModule* module : modules) {
            if (!module) continue;
            auto sym = findModuleSymbol(*module, symbol);
            if (sym && sym->value && sym->type == STT_FUNC) return module->bias + sym->value;
        }
        return std::nullopt;
    }

    // Each module's symbols sorted by address once (symbol_index.h): several function symbols at
    // one address (glibc's clone3 and __clone3) are named as gdb names them, and most pcs are
    // named without libdwfl's walk over every symbol.
    const SymbolIndex& symbolIndex(Dwfl_Module* mod) {
        auto it = symbolIndexes.find(mod);
        if (it == symbolIndexes.end()) it = symbolIndexes.emplace(mod, std::make_unique<SymbolIndex>(mod)).first;
        return *it->second;
    }
    std::map<Dwfl_Module*, std::unique_ptr<SymbolIndex>> symbolIndexes;

    // The function the symbol tables name at a pc, as dwfl_module_addrinfo does (found by the
    // sorted index where it is certain); empty when none holds it.
    std::string symbolTableName(Dwfl_Module* mod, uint64_t lookup) {
        const SymbolIndex& index = symbolIndex(mod);
        if (auto quickName = index.nameAt(lookup)) return quickName->empty() ? std::string() : functionName(*quickName);
        GElf_Off offset = 0;
        GElf_Sym sym;
        const char* found = dwfl_module_addrinfo(mod, lookup, &offset, &sym, nullptr, nullptr, nullptr);
        if (found && (sym.st_size == 0 ? offset == 0 : offset < sym.st_size))
            return functionName(index.aliasDebuggersShow(lookup - offset, found));
        return {};
    }

    // withDwarf=false: the symbol tables only (cheap: no DWARF is loaded for it).
    const Symbolization& symbolize(uint64_t lookup, bool withDwarf = true) {
        auto& from = withDwarf && useDwarf ? cache : symbolCache;
        auto it = from.find(lookup);
        if (it != from.end()) return it->second;
        Symbolization s;
        Dwfl_Module* mod = dwfl ? dwfl_addrmodule(dwfl, lookup) : nullptr;
        if (mod) {
            s.module = session.moduleOf(mod);
            s.dwflModule = mod;
        } else {
            for (const auto& m : target.modules())
                if (lookup >= m.start && lookup < m.end) s.module = &m;
        }
        if (mod && useDwarf && withDwarf) {
            symbolizeDwarf(mod, lookup, s);
            // What libdw read for it (with the kernel's fault-around: 64 KiB a page read) is
            // seldom read again: a pc is symbolized once.
            session.releaseDecompressedPages();
        }
        if (s.chain.empty() || s.chain.back().function.empty()) {
            // Symbol tables: only a symbol whose extent holds the pc names it (a stripped module's
            // nearest exported symbol would name the wrong function).
            std::string name;
            if (mod) {
                SymbolAnswers& cached = symbolAnswersOf(mod, s.module);
                char question[32] = "";
                if (cached.usable) std::snprintf(question, sizeof question, "0x%llx", static_cast<unsigned long long>(lookup - s.module->bias));
                auto hit = cached.usable ? cached.answers.find(question) : cached.answers.end();
                if (hit != cached.answers.end()) {
                    name = hit->second == "-" ? std::string() : hit->second;
                } else {
                    name = symbolTableName(mod, lookup);
                    if (cached.usable && name.find_first_of("\t\n") == std::string::npos) {
                        cached.answers[question] = name.empty() ? "-" : name;
                        cached.dirty = true;
                    }
                }
            }
            if (s.chain.empty()) {
                s.chain.emplace_back();
                if (mod && useDwarf && withDwarf) {  // no DWARF function at the pc, but perhaps its line
                    Dwarf_Addr bias = 0;
                    if (auto p = lineAt(mod, dwfl_module_addrdie(mod, lookup, &bias), bias, lookup)) {
                        s.chain.back().file = p->file;
                        s.chain.back().line = p->line;
                    }
                }
            }
            s.chain.back().function = name;
        }
        return from.emplace(lookup, std::move(s)).first->second;
    }

    // Lines through LineTables (whose tables are freed as it goes), else through libdwfl's session.
    LineTables lines;
    std::optional<SourcePosition> lineAt(Dwfl_Module* mod, Dwarf_Die* cu, Dwarf_Addr bias, uint64_t lookup) {
        bool found = false;
        if (cu) {
            auto p = lines.at(cu, lookup - bias, &found);
            if (found) return p;
        }
        Dwfl_Line* l = sourceLineAt(mod, lookup);
        if (!l) return std::nullopt;
        SourcePosition p;
        if (const char* f = dwfl_lineinfo(l, nullptr, &p.line, nullptr, nullptr, nullptr)) p.file = f;
        return p;
    }
    std::string callFile(Dwarf_Die* cu, Dwarf_Word index) {
        if (auto name = lines.fileName(cu, index)) return *name;
        return fileName(cu, index);
    }

    void symbolizeDwarf(Dwfl_Module* mod, uint64_t lookup, Symbolization& s) {
        Dwarf_Addr bias = 0;
        Dwarf_Die* cu = dwfl_module_addrdie(mod, lookup, &bias);
        if (!cu) return;
        s.dwarfBias = bias;
        std::vector<Dwarf_Die> path;  // the CU's DIEs that contain the pc, outermost first
        int budget = kMaxScopeSearch;
        findPath(cu, lookup - bias, &path, &budget);
        std::vector<Dwarf_Die> scopes(path.rbegin(), path.rend());  // innermost first
        int n = static_cast<int>(scopes.size());
        std::string file;
        int line = 0;
        if (auto p = lineAt(mod, cu, bias, lookup)) {
            file = p->file;
            line = p->line;
        }
        Dwarf_Die subprogram{};
        for (int i = 0; i < n; ++i)
            if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram) {
                subprogram = scopes[i];
                break;
            }
        for (int i = 0; i < n; ++i) {
            int tag = dwarf_tag(&scopes[i]);
            if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine) continue;
            Symbolized f;
            f.function = dieFunctionName(&scopes[i]);
            f.file = file;
            f.line = line;
            f.inlined = tag == DW_TAG_inlined_subroutine;
            f.haveScope = true;
            f.scope = scopes[i];
            f.subprogram = subprogram;
            s.chain.push_back(f);
            if (tag == DW_TAG_subprogram) break;
            // The caller of an inlined call is at its call site.
            Dwarf_Attribute attr;
            Dwarf_Word value = 0;
            file = dwarf_attr(&scopes[i], DW_AT_call_file, &attr) && dwarf_formudata(&attr, &value) == 0 ? callFile(cu, value) : "";
            line = dwarf_attr(&scopes[i], DW_AT_call_line, &attr) && dwarf_formudata(&attr, &value) == 0 ? static_cast<int>(value) : 0;
        }
        if (!s.chain.empty()) s.chain.back().inlined = false;
    }
};

NativeStacks::NativeStacks(const Target& target, bool useDwarf) : impl_(std::make_unique<Impl>(target, useDwarf)) {
    Impl& d = *impl_;
    if (!d.dwfl) {
        unavailable_ = std::string("libdwfl: ") + dwfl_errmsg(-1);
        return;
    }
    if (!d.session.reportedModules()) {
        unavailable_ = "no module file of the target is at hand";
        return;
    }
    // Static: libdwfl keeps the pointer for the session's lifetime, whichever unwinder is current.
    static const Dwfl_Thread_Callbacks callbacks = {Impl::nextThread, Impl::getThread, Impl::memoryRead,
                                                    Impl::setInitialRegisters, nullptr, nullptr};
    d.session.threadArg() = &d;
    if (!d.session.attachThreads(&callbacks, target.pid()))
        unavailable_ = std::string("libdwfl cannot unwind this target: ") + dwfl_errmsg(-1);
}

NativeStacks::~NativeStacks() = default;


std::vector<NativeFrame> NativeStacks::top(const OsThread& thread) {
    std::vector<NativeFrame> out;
    if (!thread.pc) return out;
    const Symbolization& s = impl_->symbolize(thread.pc, false);
    for (const auto& f : s.chain) out.push_back(frameOf(s, f, thread.pc, true));
    return out;
}

std::vector<NativeFrame> NativeStacks::at(uint64_t pc, bool activation) {
    std::vector<NativeFrame> out;
    if (!pc) return out;
    const Symbolization& s = impl_->symbolize(activation ? pc : pc - 1);
    for (const auto& f : s.chain) out.push_back(frameOf(s, f, pc, activation));
    return out;
}

bool NativeStacks::spansCutShort(const OsThread& thread) {
    spans(thread);
    return impl_->cutShort.count(thread.lwp) != 0;
}

const std::vector<StackSpan>* NativeStacks::unwoundSpans(const OsThread& thread) const {
    auto known = impl_->spansOf.find(thread.lwp);
    return known == impl_->spansOf.end() ? nullptr : &known->second;
}

const std::vector<StackSpan>& NativeStacks::spans(const OsThread& thread) {
    Impl& d = *impl_;
    auto known = d.spansOf.find(thread.lwp);
    if (known != d.spansOf.end()) return known->second;
    std::vector<StackSpan>& out = d.spansOf[thread.lwp];
    if (!unavailable_.empty() || thread.registers.empty()) return out;
    std::vector<RawFrame> raw;
    d.current = &thread;
    d.frames = &raw;
    d.registersDepth = 0;
    d.physicalLimit = kMaxPhysicalFrames;
    int status = dwfl_getthread_frames(d.dwfl, thread.lwp, Impl::onFrame, &d);
    d.current = nullptr;
    d.frames = nullptr;
    // As unwind() tells it: libdwfl ends most stacks with an error; only an end in memory of no
    // known module, or in a module whose file (its CFI) is missing, leaves frames unseen.
    if (raw.empty()) d.cutShort.insert(thread.lwp);
    else if (status == -1) {
        const Symbolization& last = d.symbolize(raw.back().activation ? raw.back().pc : raw.back().pc - 1, false);
        if (!last.module || !last.module->elf) d.cutShort.insert(thread.lwp);
    }
    for (const auto& r : raw) {
        const Symbolization& s = d.symbolize(r.activation ? r.pc : r.pc - 1, false);
        out.push_back({r.pc, r.sp, s.chain.empty() ? std::string() : s.chain.back().function, s.module ? s.module->path : std::string(),
                       r.activation});
    }
    return out;
}

const std::vector<NativeFrame>& NativeStacks::firstFrames(const OsThread& thread, size_t maxFrames) {
    Impl& d = *impl_;
    auto frames = unavailable_.empty() ? d.quick.frames(thread, maxFrames) : std::nullopt;
    std::vector<uint64_t> key;  // the pcs, a return address complemented
    if (frames) {
        key.reserve(frames->size());
        for (const auto& r : *frames) key.push_back(r.activation ? r.pc : ~r.pc);
        auto known = d.firstFramesOf.find(key);
        if (known != d.firstFramesOf.end()) return known->second;
        std::vector<NativeFrame> out;
        for (const auto& r : *frames) {
            const Symbolization& s = d.symbolize(r.activation ? r.pc : r.pc - 1, false);
            for (const auto& f : s.chain)
                if (out.size() < maxFrames) out.push_back(frameOf(s, f, r.pc, r.activation));
        }
        return d.firstFramesOf.emplace(std::move(key), std::move(out)).first->second;
    }
    std::vector<NativeFrame> out = unwind(thread, maxFrames, 0, false).frames;
    for (const auto& f : out) key.push_back(f.activation ? f.pc : ~f.pc);
    return d.firstFramesOf.emplace(std::move(key), std::move(out)).first->second;
}

NativeStack NativeStacks::unwind(const OsThread& thread, size_t maxFrames, size_t valuesDepth, bool dwarf) {
    NativeStack stack;
    stack.lwp = thread.lwp;
    if (!unavailable_.empty()) {
        stack.end = unavailable_;
        return stack;
    }
    if (thread.registers.empty()) {
        stack.end = "the thread's registers are unknown";
        return stack;
    }
    Impl& d = *impl_;
    std::vector<RawFrame> raw;
    d.current = &thread;
    d.frames = &raw;
    d.registersDepth = valuesDepth ? valuesDepth + 1 : 0;  // the caller's registers too (entry values, CFA)
    // Every physical frame gives at least one frame: deeper ones would not be shown. One more than
    // asked, so that the caller of the last one is known (entry values, tail calls).
    // Whole stacks (the crash, --native) keep the 1024 bound and its word.
    d.physicalLimit = maxFrames >= 256 ? kMaxPhysicalFrames : std::min(kMaxPhysicalFrames, std::max(maxFrames, valuesDepth + 2) + 1);
    int status = dwfl_getthread_frames(d.dwfl, thread.lwp, Impl::onFrame, &d);
    std::string error = status == -1 ? dwfl_errmsg(-1) : "";
    d.current = nullptr;
    d.frames = nullptr;
    if (raw.size() >= kMaxPhysicalFrames && d.physicalLimit == kMaxPhysicalFrames) stack.end = "more than " + std::to_string(kMaxPhysicalFrames) + " frames: the rest is not shown";
    else if (!error.empty() && !raw.empty()) {
        // libdwfl reports the end of some stacks as an error: only a frame in a module without
        // a file, or an unreadable stack, is worth a word.
        const Symbolization& last = d.symbolize(raw.back().activation ? raw.back().pc : raw.back().pc - 1, dwarf);
        if (!last.module) stack.end = "the stack continues in memory that belongs to no known module (" + error + ")";
        else if (!last.module->elf) stack.end = "the stack continues in " + last.module->path + ", whose file is not at hand";
    } else if (raw.empty()) {
        stack.end = error.empty() ? "no frame" : error;
    }

    std::string blind;  // a module the unwinder crossed without its CFI
    stack.frames.reserve(std::min(raw.size(), maxFrames));  // one a physical frame, more where calls were inlined
    for (size_t i = 0; i < raw.size() && stack.frames.size() < maxFrames; ++i) {
        const RawFrame& r = raw[i];
        uint64_t lookup = r.activation ? r.pc : r.pc - 1;
        const Symbolization& s = d.symbolize(lookup, dwarf);
        if (s.module && !s.module->elf && i + 1 < raw.size() && blind.empty()) blind = s.module->path;
        size_t firstOfFrame = stack.frames.size();
        for (const auto& f : s.chain) {
            if (stack.frames.size() >= maxFrames) break;
            stack.frames.push_back(frameOf(s, f, r.pc, r.activation));
        }
        if (i < valuesDepth) d.addValues(raw, i, s, stack.frames, firstOfFrame);
        if (dwarf && i + 1 < raw.size())
            for (auto& tail : d.tailCall(s, raw[i + 1]))
                if (stack.frames.size() < maxFrames) stack.frames.push_back(tail);
    }
    if (!blind.empty())
        stack.end += std::string(stack.end.empty() ? "" : "; ") + "the frames above " + blind +
                     " were unwound without its CFI (its file is missing or does not match): some may be missing";
    // Reports keep a thousand threads' stacks: not the doubling's unused half of each.
    stack.frames.shrink_to_fit();
    return stack;
}

std::vector<EvalArguments> NativeStacks::evalArguments(const OsThread& thread) {
    std::vector<EvalArguments> out;
    if (!unavailable_.empty() || thread.registers.empty() || !impl_->useDwarf) return out;
    Impl& d = *impl_;
    std::vector<RawFrame> raw;
    d.current = &thread;
    d.frames = &raw;
    d.registersDepth = kMaxPhysicalFrames;  // every frame's registers: the eval loops may be deep
    d.physicalLimit = kMaxPhysicalFrames;
    dwfl_getthread_frames(d.dwfl, thread.lwp, Impl::onFrame, &d);
    d.current = nullptr;
    d.frames = nullptr;
    d.registersDepth = 0;
    for (size_t i = 0; i < raw.size(); ++i) {
        uint64_t lookup = raw[i].activation ? raw[i].pc : raw[i].pc - 1;
        // The symbol tables first: DWARF is read only for the eval loop's own frames.
        const Symbolization& named = d.symbolize(lookup, false);
        if (named.chain.empty() || !isEvalLoopFunction(named.chain.back().function)) continue;
        const Symbolization& s = d.symbolize(lookup, true);
        if (s.chain.empty() || !s.chain.back().haveScope) continue;
        std::vector<FrameValue> values;
        parameterValues(d.contextOf(raw, i, s), s.chain.back().scope, s.chain.back().subprogram, &values);
        EvalArguments a;
        a.sp = raw[i].sp;
        for (const auto& v : values) {
            if (v.kind != FrameValue::Kind::Parameter) continue;
            if (v.name == "tstate") a.tstate = v.value;
            else if (v.name == "frame" || v.name == "f") a.frame = v.value;
        }
        out.push_back(a);
    }
    return out;
}

}  // namespace pytstates
