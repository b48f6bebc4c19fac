// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/lifecycle_probes.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "symbols/cpython/runtimes.h"
#include "symbols/elf/function_extent.h"
#include "symbols/elf/elf_file.h"
#include "symbols/libraries/capstone_calls.h"
#include "symbols/modules/module_files.h"
#include "symbols/text/base_name.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

const char* lifecycleEventName(LifecycleEvent event) {
    switch (event) {
        case LifecycleEvent::Created: return "created";
        case LifecycleEvent::Cleared: return "cleared";
        case LifecycleEvent::Deleted: return "deleted";
        case LifecycleEvent::Cached: return "cached";
        case LifecycleEvent::Used: return "used";
    }
    return "?";
}

namespace {

// One function to break in, for the CPython minors [minMinor, maxMinor]. tstateArg: which
// argument holds the thread state (0-based); -1: the return value.
struct Spec {
    const char* function;
    LifecycleEvent event;
    int tstateArg;
    int minMinor, maxMinor;
    bool optional;  // static helpers an optimiser may inline: their absence is no loss when the
                    // exported functions around them are watched
};

// Read from each version's own DWARF (pyenv 3.8.18 ... 3.13.0, Debian's 3.11): the signatures
// differ where the table differs. Creation returns the new thread state; every creation path ends
// in PyThreadState_New, _PyThreadState_New (3.12+) or _PyThreadState_Prealloc (Py_NewInterpreter,
// threading) or, 3.13 on, _PyThreadState_NewBound, so their returns see every new thread state,
// new_threadstate's too where it has a symbol. Deletion: PyThreadState_DeleteCurrent() takes no argument; the function it calls with
// the thread state (_PyThreadState_DeleteCurrent 3.9+, tstate_delete_common in 3.8) is watched.
const Spec kSpecs[] = {
    {"PyThreadState_New", LifecycleEvent::Created, -1, 8, 99, false},
    {"_PyThreadState_New", LifecycleEvent::Created, -1, 12, 99, false},
    {"_PyThreadState_Prealloc", LifecycleEvent::Created, -1, 8, 99, false},
    {"_PyThreadState_NewBound", LifecycleEvent::Created, -1, 13, 99, true},  // PyThreadState_New's tail call (3.13)
    {"new_threadstate", LifecycleEvent::Created, -1, 8, 99, true},
    {"PyThreadState_Clear", LifecycleEvent::Cleared, 0, 8, 99, false},
    {"PyThreadState_Delete", LifecycleEvent::Deleted, 0, 8, 99, false},
    {"_PyThreadState_DeleteCurrent", LifecycleEvent::Deleted, 0, 9, 99, false},
    {"tstate_delete_common", LifecycleEvent::Deleted, 1, 8, 8, false},  // (runtime, tstate)
    {"tstate_delete_common", LifecycleEvent::Deleted, 0, 9, 99, true},
    {"PyThread_tss_set", LifecycleEvent::Cached, 1, 8, 99, false},
    {"PyEval_AcquireThread", LifecycleEvent::Used, 0, 8, 99, false},
    {"PyEval_RestoreThread", LifecycleEvent::Used, 0, 8, 99, false},
    {"PyThreadState_Swap", LifecycleEvent::Used, 0, 8, 99, false},
};

std::string argumentRegister(const Arch& arch, int index) {
    const char* name = index < 0 ? arch.returnRegister() : arch.argumentRegister(static_cast<unsigned>(index));
    return name ? name : "";
}

// A function's symbol: its own name, or the name link-time optimisation gave a local copy
// ("tstate_delete_common.lto_priv.0": the same function, only renamed). Clones whose calling
// convention changed (.isra, .constprop, .part) are not taken: their registers mean other things.
std::optional<std::pair<std::string, ElfSymbol>> functionSymbol(const LoadedModule& module, const std::string& name) {
    for (const std::string& candidate : {name, name + ".lto_priv.0", name + ".lto_priv.1"}) {
        auto sym = findModuleSymbol(module, candidate);
        if (sym && sym->defined && sym->type == STT_FUNC && sym->value) return std::make_pair(candidate, *sym);
    }
    return std::nullopt;
}

// The function a PLT stub jumps to: the stub's `jmp *slot(%rip)` (x86_64) names a GOT slot, and
// the module's .rela.plt names the symbol bound there. Empty when that cannot be told.
std::string pltTarget(const ElfFile& elf, const Arch& arch, uint64_t stub) {
    if (arch.machine != Machine::X86_64) return "";
    unsigned char code[16];
    if (elf.readVaddr(stub, code, sizeof code) != sizeof code) return "";
    const CapstoneCalls* cs = capstone();
    csh handle;
    if (!cs || cs->open(CS_ARCH_X86, CS_MODE_64, &handle) != CS_ERR_OK) return "";
    cs->option(handle, CS_OPT_DETAIL, CS_OPT_ON);
    cs_insn* insn = nullptr;
    size_t n = cs->disasm(handle, code, sizeof code, stub, 2, &insn);
    uint64_t slot = 0;
    for (size_t i = 0; i < n && !slot; ++i) {
        const cs_x86& x = insn[i].detail->x86;
        if (insn[i].id == X86_INS_JMP && x.op_count == 1 && x.operands[0].type == X86_OP_MEM && x.operands[0].mem.base == X86_REG_RIP)
            slot = insn[i].address + insn[i].size + static_cast<uint64_t>(x.operands[0].mem.disp);
    }
    if (n) cs->free(insn, n);
    cs->close(&handle);
    if (!slot) return "";
    ::Elf* e = elf.handle();
    for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || sh.sh_entsize == 0) continue;
        Elf_Scn* symScn = elf_getscn(e, sh.sh_link);
        GElf_Shdr symSh;
        Elf_Data* data = elf_getdata(scn, nullptr);
        Elf_Data* syms = symScn ? elf_getdata(symScn, nullptr) : nullptr;
        if (!data || !syms || !gelf_getshdr(symScn, &symSh)) continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; ++i) {
            GElf_Rela rela;
            if (!gelf_getrela(data, static_cast<int>(i), &rela) || rela.r_offset != slot) continue;
            GElf_Sym sym;
            if (!gelf_getsym(syms, static_cast<int>(GELF_R_SYM(rela.r_info)), &sym)) return "";
            const char* name = elf_strptr(e, symSh.sh_link, sym.st_name);
            return name ? name : "";
        }
    }
    return "";
}

// The return instructions (link-time addresses) of code without a symbol that starts at vaddr,
// its extent told by the call-frame information; empty when that cannot be told, or when the code
// itself ends in a tail call (where it returns is then not known).
std::vector<uint64_t> unnamedReturns(const ElfFile& elf, const Arch& arch, uint64_t vaddr) {
    auto extent = functionExtentAt(elf, vaddr);
    if (!extent || extent->second - extent->first > (1u << 20)) return {};
    std::vector<unsigned char> code(extent->second - extent->first);
    if (elf.readVaddr(vaddr, code.data(), code.size()) != code.size()) return {};
    auto exits = functionExits(arch, code.data(), code.size());
    if (!exits.tailCalls.empty()) return {};
    std::vector<uint64_t> out;
    for (uint64_t offset : exits.returns) out.push_back(vaddr + offset);
    return out;
}

}  // namespace

FunctionExits functionExits(const Arch& arch, const unsigned char* code, size_t size) {
    FunctionExits out;
    const CapstoneCalls* cs = capstone();
    csh handle;
    bool arm = arch.machine == Machine::AArch64;
    if (!cs || cs->open(arm ? CS_ARCH_ARM64 : CS_ARCH_X86, arm ? CS_MODE_ARM : CS_MODE_64, &handle) != CS_ERR_OK) return out;
    cs->option(handle, CS_OPT_DETAIL, CS_OPT_ON);
    // Instruction by instruction, so that bytes capstone cannot decode (data in text, padding) are
    // stepped over rather than ending the walk.
    cs_insn* insn = cs->malloc(handle);
    const uint8_t* p = code;
    size_t left = size;
    uint64_t address = 0;
    while (left > 0) {
        if (!cs->disasmIter(handle, &p, &left, &address, insn)) {
            size_t step = arm ? 4 : 1;
            if (left < step) break;
            p += step;
            left -= step;
            address += step;
            continue;
        }
        if (arm ? insn->id == ARM64_INS_RET : insn->id == X86_INS_RET) out.returns.push_back(insn->address);
        // A direct jump out of the function's bytes is a tail call.
        std::optional<int64_t> target;
        if (!arm && insn->id == X86_INS_JMP && insn->detail->x86.op_count == 1 && insn->detail->x86.operands[0].type == X86_OP_IMM)
            target = insn->detail->x86.operands[0].imm;
        if (arm && insn->id == ARM64_INS_B && insn->detail->arm64.cc == ARM64_CC_INVALID && insn->detail->arm64.op_count == 1 &&
            insn->detail->arm64.operands[0].type == ARM64_OP_IMM)
            target = insn->detail->arm64.operands[0].imm;
        if (target && (*target < 0 || static_cast<uint64_t>(*target) >= size)) out.tailCalls.push_back(*target);
    }
    cs->free(insn, 1);
    cs->close(&handle);
    return out;
}

std::vector<std::string> lifecycleCreators() {
    std::vector<std::string> out;
    for (const Spec& spec : kSpecs)
        if (spec.event == LifecycleEvent::Created && std::find(out.begin(), out.end(), spec.function) == out.end())
            out.push_back(spec.function);
    return out;
}

ProbePlan planLifecycleProbes(const Target& target) {
    ProbePlan plan;
    const Arch& arch = target.arch();
    RuntimeCandidates found = findRuntimeCandidates(target, true);
    std::string noCapstone;
    if (!capstone(&noCapstone))  // the return probes need it; the entry probes do not
        plan.cannot.push_back("no return instruction can be found (" + noCapstone +
                              "): the thread states that creation functions return are not recorded");
    for (const Runtime& rt : found.candidates) {
        const LoadedModule& module = target.modules().at(rt.moduleIndex);
        int minor = static_cast<int>((rt.versionHex >> 16) & 0xff);
        std::string name = baseName(module.path);
        plan.modules.push_back(module.path + " (CPython " + rt.version + ")");
        std::set<uint64_t> creators;         // entries of the creation functions watched here
        std::set<std::string> creatorNames;  // and their names, for calls through the PLT
        std::map<uint64_t, std::vector<size_t>> followed;  // tail-called code without a symbol: its probes
        for (const Spec& spec : kSpecs)
            if (spec.event == LifecycleEvent::Created && minor >= spec.minMinor && minor <= spec.maxMinor)
                if (auto sym = functionSymbol(module, spec.function)) {
                    creators.insert(module.bias + sym->second.value);
                    creatorNames.insert(spec.function);
                }
        for (const Spec& spec : kSpecs) {
            if (minor < spec.minMinor || minor > spec.maxMinor) continue;
            auto sym = functionSymbol(module, spec.function);
            if (!sym) {
                if (!spec.optional)
                    plan.cannot.push_back(name + ": " + spec.function + " has no symbol (inlined, or a stripped build): " +
                                          lifecycleEventName(spec.event) + " events through it are not recorded");
                continue;
            }
            LifecycleProbe probe;
            probe.function = spec.function;
            probe.module = module.path;
            probe.event = spec.event;
            probe.tstateRegister = argumentRegister(arch, spec.tstateArg);
            if (spec.event == LifecycleEvent::Cached) {
                probe.keyRegister = argumentRegister(arch, 0);
                probe.keyOffset = 4;  // Py_tss_t {int _is_initialized; pthread_key_t _key;}
            }
            uint64_t entry = module.bias + sym->second.value;
            if (spec.tstateArg >= 0) {
                probe.address = entry;
                plan.probes.push_back(probe);
                continue;
            }
            // A returned thread state: break on every return instruction of the function's bytes.
            std::vector<unsigned char> code(sym->second.size);
            size_t got = sym->second.size && module.elf ? module.elf->readVaddr(sym->second.value, code.data(), code.size()) : 0;
            if (got != code.size() || code.empty()) {
                plan.cannot.push_back(name + ": " + spec.function + "'s code is not at hand (" +
                                      (module.elf ? "its symbol has no size" : "the module's file is missing") +
                                      "): the thread states it creates are not recorded");
                continue;
            }
            auto exits = functionExits(arch, code.data(), code.size());
            // A tail call returns through the callee: when that is a creation function watched
            // too, its return sees the thread state. A callee without a symbol (a stripped
            // build's new_threadstate) is followed: its returns are watched as this function's.
            for (int64_t target : exits.tailCalls) {
                uint64_t callee = entry + static_cast<uint64_t>(target);
                if (creators.count(callee) || creatorNames.count(pltTarget(*module.elf, arch, callee - module.bias))) continue;
                auto seen = followed.find(callee);
                if (seen != followed.end()) {  // another caller of the same code: named in its probes
                    for (size_t i : seen->second) {
                        std::string& label = plan.probes[i].function;
                        label.insert(label.size() - 1, std::string(", ") + spec.function);
                    }
                    continue;
                }
                auto returns = unnamedReturns(*module.elf, arch, callee - module.bias);
                if (returns.empty()) {
                    plan.cannot.push_back(name + ": " + spec.function + " ends in a tail call to " + hexAddress(callee) +
                                          ", which is not watched: the thread states it returns from there are not recorded");
                    continue;
                }
                LifecycleProbe tail = probe;
                tail.atReturn = true;
                tail.function = "<no symbol at " + hexAddress(callee) + ", tail-called by " + spec.function + ">";
                for (uint64_t at : returns) {
                    tail.address = at + module.bias;
                    followed[callee].push_back(plan.probes.size());
                    plan.probes.push_back(tail);
                }
            }
            if (exits.returns.empty() && exits.tailCalls.empty() && noCapstone.empty())
                plan.cannot.push_back(name + ": " + spec.function + " has no return instruction that capstone finds: the thread states it creates are not recorded");
            probe.atReturn = true;
            for (uint64_t offset : exits.returns) {
                probe.address = entry + offset;
                plan.probes.push_back(probe);
            }
        }
    }
    for (const auto& why : found.rejected) plan.cannot.push_back(why);
    return plan;
}

}  // namespace pytstates
