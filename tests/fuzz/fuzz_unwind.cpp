// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the unwinder and the DWARF parameter evaluator over arbitrary stacks. The modules are
// this process's own (real code, real CFI and DWARF: the fuzzer is built with -g); the thread's
// registers and its whole stack come from the input. Unwinding must end (bounded, cycle-safe)
// and never crash, whatever the stack holds.
#include <link.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "symbols/modules/module_files.h"
#include "symbols/native/native_stacks.h"
#include "symbols/target.h"

namespace {

constexpr uint64_t kStackBase = 0x7ff000000000;

class FuzzTarget : public pytstates::Target {
public:
    FuzzTarget() {
        dl_iterate_phdr(
            [](dl_phdr_info* info, size_t, void* self) {
                auto* t = static_cast<FuzzTarget*>(self);
                std::string path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
                char real[4096];
                if (!realpath(path.c_str(), real)) return 0;
                pytstates::LoadedModule m;
                m.path = real;
                m.bias = info->dlpi_addr;
                pytstates::attachModuleFiles(m, {});
                if (!m.elf) return 0;
                m.start = m.bias + m.elf->firstLoadVaddr();
                m.end = m.start + 1;
                for (int i = 0; i < info->dlpi_phnum; ++i)
                    if (info->dlpi_phdr[i].p_type == PT_LOAD)
                        m.end = std::max<uint64_t>(m.end, m.bias + info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz);
                t->modules_.push_back(std::move(m));
                return 0;
            },
            this);
    }

    void setInput(const uint8_t* data, size_t size) {
        stack_.assign(data, data + size);
        threads_.assign(1, {});
        auto& t = threads_[0];
        t.lwp = 1;
        t.registers.assign(pytstates::hostArch().dwarfRegisters, 0);
        // Registers: the first bytes of the input, as words; the pc is put inside a real module's
        // code so that CFI is looked up, and the sp at the stack.
        for (size_t r = 0; r < t.registers.size() && (r + 1) * 8 <= size; ++r) std::memcpy(&t.registers[r], data + r * 8, 8);
        const auto& m = modules_[t.registers[0] % modules_.size()];
        t.pc = m.start + t.registers[1] % std::max<uint64_t>(1, m.end - m.start);
        t.sp = kStackBase + (t.registers[2] % 64) * 8;
        t.registers[pytstates::hostArch().pcRegister] = t.pc;
        t.registers[pytstates::hostArch().spRegister] = t.sp;
    }

    size_t read(uint64_t addr, void* buf, size_t len) const override {
        if (len == 0) return 0;
        if (addr >= kStackBase && addr - kStackBase < stack_.size()) {
            size_t n = std::min<uint64_t>(len, stack_.size() - (addr - kStackBase));
            std::memcpy(buf, stack_.data() + (addr - kStackBase), n);
            return n;
        }
        for (const auto& m : modules_)  // code and data as the files hold them
            if (addr >= m.start && addr < m.end) return m.elf->readVaddr(addr - m.bias, buf, len);
        return 0;
    }
    pytstates::TargetKind kind() const override { return pytstates::TargetKind::Core; }
    int pid() const override { return 1; }
    std::string executable() const override { return "/proc/self/exe"; }
    const std::vector<pytstates::OsThread>& threads() const override { return threads_; }
    const std::vector<pytstates::LoadedModule>& modules() const override { return modules_; }
    const std::vector<std::string>& warnings() const override { return warnings_; }

private:
    std::vector<uint8_t> stack_;
    std::vector<pytstates::OsThread> threads_;
    std::vector<pytstates::LoadedModule> modules_;
    std::vector<std::string> warnings_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static FuzzTarget* target = new FuzzTarget();
    static pytstates::NativeStacks* stacks = new pytstates::NativeStacks(*target, true);
    if (target->modules().empty()) return 0;
    target->setInput(data, size);
    pytstates::NativeStack stack = stacks->unwind(target->threads()[0], 256, 10);
    (void)stack;
    stacks->top(target->threads()[0]);
    return 0;
}
