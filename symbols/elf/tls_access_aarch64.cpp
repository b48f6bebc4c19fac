// SPDX-License-Identifier: Apache-2.0
// The aarch64 TLS access sequences (ELF for the Arm 64-bit Architecture, "Thread Local Storage"),
// followed register by register through an accessor's first instructions, as GCC emits them and
// the linker relaxes them:
//   local-exec:   mrs xT, tpidr_el0; add xA, xT, #hi, lsl #12; add xA, xA, #lo; ldr x0, [xA]
//                 (Debian 13's arm64 python3.13: the variable at tpidr_el0 + 0x18)
//   initial-exec: adrp xG, slot; ldr xG, [xG, #lo]; mrs xT, tpidr_el0; ldr x0, [xT, xG]
//                 (the GOT slot holds the offset from the thread pointer, filled at load time)
//   TLS descriptor (-fPIC's default; Debian 13's arm64 libpython3.13.so):
//                 adrp x0, desc; ldr xR, [x0, #lo]; add x0, x0, #lo; blr xR; mrs xT, tpidr_el0;
//                 ldr x0, [xT, x0]  -- the descriptor's R_AARCH64_TLSDESC relocation has the
//                 variable's offset in the module's TLS block as its addend
//   and the relaxations to movz/movk constants.
#include "symbols/elf/tls_access_aarch64.h"

#include <elf.h>

#include <algorithm>
#include <array>

#include "symbols/elf/elf_file.h"

namespace pytstates {

namespace {

constexpr size_t kInstructions = 24;  // the accessors seen do it within their first 9

// What a register is known to hold.
struct Value {
    enum class Kind {
        Unknown,
        Tp,        // the thread pointer + v
        Address,   // the link-time address v (adrp, add)
        GotSlot,   // the 8 bytes at link-time address v (a GOT slot, read only if it matters)
        Constant,  // v (movz/movk: a relaxed initial-exec or local-exec offset)
        DescOff,   // what a TLS descriptor call returns: the variable in the module's block at v, from the thread pointer
        TpModule,  // the thread pointer + DescOff: the variable at offset v of the module's block
    };
    Kind kind = Kind::Unknown;
    int64_t v = 0;
};
using K = Value::Kind;

bool is(uint32_t insn, uint32_t mask, uint32_t value) { return (insn & mask) == value; }

std::optional<int64_t> tlsdescAddendIn(const ElfFile& elf, const char* section, uint64_t slot) {
    auto rela = elf.findSection(section);
    if (!rela || rela->type != SHT_RELA) return std::nullopt;
    constexpr uint64_t kMaxEntries = 1u << 20;
    uint64_t count = std::min<uint64_t>(rela->size / sizeof(Elf64_Rela), kMaxEntries);
    Elf64_Rela batch[256];
    for (uint64_t i = 0; i < count;) {
        size_t want = static_cast<size_t>(std::min<uint64_t>(count - i, 256));
        size_t got = elf.readAt(rela->offset + i * sizeof(Elf64_Rela), batch, want * sizeof(Elf64_Rela)) / sizeof(Elf64_Rela);
        if (!got) return std::nullopt;
        for (size_t j = 0; j < got; ++j)
            if (batch[j].r_offset == slot && ELF64_R_TYPE(batch[j].r_info) == R_AARCH64_TLSDESC)
                // A local symbol (CPython's static _Py_tss_tstate) has symbol 0: the addend is all.
                return ELF64_R_SYM(batch[j].r_info) == 0 ? std::optional<int64_t>(batch[j].r_addend) : std::nullopt;
        i += got;
    }
    return std::nullopt;
}

// The R_AARCH64_TLSDESC relocation's addend of the descriptor at link-time address `slot`: in
// .rela.plt (lazily resolved descriptors, as GNU ld puts them) or .rela.dyn.
std::optional<int64_t> tlsdescAddend(const ElfFile& elf, uint64_t slot) {
    for (const char* name : {".rela.plt", ".rela.dyn"})
        if (auto found = tlsdescAddendIn(elf, name, slot)) return found;
    return std::nullopt;
}

class Tracker {
public:
    Tracker(const Memory& memory, const LoadedModule& module) : memory_(memory), module_(module) {}

    // The location, once an instruction reaches the variable; nullopt while it does not.
    std::optional<TlsLocation> step(uint32_t insn, uint64_t pc, bool* stop) {
        unsigned rd = insn & 31, rn = (insn >> 5) & 31, rm = (insn >> 16) & 31;
        if (is(insn, 0xffffffe0, 0xd53bd040)) {  // mrs xD, tpidr_el0
            set(rd, {K::Tp, 0});
        } else if (is(insn, 0x9f000000, 0x90000000)) {  // adrp xD, page
            int64_t imm = static_cast<int64_t>((((insn >> 5) & 0x7ffff) << 2) | ((insn >> 29) & 3));
            imm = (imm << 43) >> 43;  // 21-bit signed, in pages
            set(rd, {K::Address, static_cast<int64_t>(pc & ~uint64_t(0xfff)) + imm * 4096});
        } else if (is(insn, 0xff800000, 0x91000000)) {  // add xD, xN, #imm{, lsl #12}
            int64_t imm = static_cast<int64_t>((insn >> 10) & 0xfff) << (((insn >> 22) & 1) ? 12 : 0);
            Value n = get(rn);
            set(rd, n.kind == K::Tp || n.kind == K::Address || n.kind == K::TpModule ? Value{n.kind, n.v + imm} : Value{});
        } else if (is(insn, 0xffe0fc00, 0x8b000000)) {  // add xD, xN, xM
            set(rd, combine(get(rn), get(rm)));
        } else if (is(insn, 0xff800000, 0xd2800000)) {  // movz xD, #imm{, lsl #16*hw}
            set(rd, {K::Constant, static_cast<int64_t>(uint64_t((insn >> 5) & 0xffff) << (16 * ((insn >> 21) & 3)))});
        } else if (is(insn, 0xff800000, 0xf2800000)) {  // movk xD, #imm{, lsl #16*hw}
            Value d = get(rd);
            unsigned shift = 16 * ((insn >> 21) & 3);
            uint64_t v = (uint64_t(d.v) & ~(uint64_t(0xffff) << shift)) | (uint64_t((insn >> 5) & 0xffff) << shift);
            set(rd, d.kind == K::Constant ? Value{K::Constant, static_cast<int64_t>(v)} : Value{});
        } else if (is(insn, 0xffc00000, 0xf9400000)) {  // ldr xD, [xN, #imm]
            int64_t imm = static_cast<int64_t>((insn >> 10) & 0xfff) * 8;
            Value n = get(rn);
            if (auto at = reached(n, imm)) return at;
            set(rd, n.kind == K::Address ? Value{K::GotSlot, n.v + imm} : Value{});
        } else if (is(insn, 0xffe0fc00, 0xf8606800)) {  // ldr xD, [xN, xM]
            if (auto at = reached(combine(get(rn), get(rm)), 0)) return at;
            set(rd, {});
        } else if (is(insn, 0xfffffc1f, 0xd63f0000)) {  // blr xN: a TLS descriptor call keeps all but x0 and x30
            Value target = get(rn), arg = get(0);
            bool descriptor = target.kind == K::GotSlot && arg.kind == K::Address && arg.v == target.v;
            auto addend = descriptor && module_.elf ? tlsdescAddend(*module_.elf, static_cast<uint64_t>(arg.v)) : std::nullopt;
            set(0, addend ? Value{K::DescOff, *addend} : Value{});
            set(30, {});
            if (!addend) *stop = true;  // an ordinary call: what the registers hold is lost
        } else if (is(insn, 0xfc000000, 0x94000000) || is(insn, 0xfc000000, 0x14000000) ||
                   is(insn, 0xfffffc1f, 0xd65f0000) || is(insn, 0xfffffc1f, 0xd61f0000)) {  // bl, b, ret, br
            *stop = true;
        } else if (!is(insn, 0xfffff01f, 0xd503201f)) {  // not a hint (bti, paciasp, autiasp, nop)
            set(rd, {});  // anything else may have written its first register operand
        }
        return std::nullopt;
    }

private:
    Value get(unsigned r) const { return r < 31 ? regs_[r] : Value{}; }  // 31: sp or xzr
    void set(unsigned r, Value v) {
        if (r < 31) regs_[r] = v;
    }

    // xN + xM, for the kinds that matter.
    Value combine(Value a, Value b) {
        if (b.kind == K::Tp) std::swap(a, b);
        if (a.kind != K::Tp) return {};
        if (b.kind == K::Constant) return {K::Tp, a.v + b.v};
        if (b.kind == K::GotSlot) {  // initial-exec: the slot holds the offset from the thread pointer
            auto offset = memory_.readValue<int64_t>(module_.bias + static_cast<uint64_t>(b.v));
            if (!offset) return {};
            initialExec_ = true;
            return {K::Tp, a.v + *offset};
        }
        if (b.kind == K::DescOff && a.v == 0) return {K::TpModule, b.v};
        return {};
    }

    // A load through `base` + imm that reads the variable.
    std::optional<TlsLocation> reached(Value base, int64_t imm) const {
        // The first 16 bytes above tpidr_el0 are glibc's TCB (the DTV pointer): no variable is there.
        if (base.kind == K::Tp && base.v + imm >= 16)
            return TlsLocation{TlsLocation::Kind::ThreadPointerOffset, base.v + imm, initialExec_ ? "initial-exec" : "local-exec"};
        if (base.kind == K::TpModule) return TlsLocation{TlsLocation::Kind::ModuleOffset, base.v + imm, "tls-descriptor"};
        return std::nullopt;
    }

    const Memory& memory_;
    const LoadedModule& module_;
    std::array<Value, 31> regs_{};
    bool initialExec_ = false;
};

}  // namespace

std::optional<TlsLocation> decodeTlsAccessAarch64(const Memory& memory, const LoadedModule& module, uint64_t functionVaddr) {
    if (!module.elf) return std::nullopt;
    uint32_t code[kInstructions];
    size_t n = module.elf->readVaddr(functionVaddr, code, sizeof code) / 4;
    Tracker tracker(memory, module);
    for (size_t i = 0; i < n; ++i) {
        bool stop = false;
        if (auto at = tracker.step(code[i], functionVaddr + 4 * i, &stop)) return at;
        if (stop) break;
    }
    return std::nullopt;
}

}  // namespace pytstates
