// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the decoders that read what a damaged process left behind — line tables, pybind11
// IDs, build-id notes, and Python str/bytes/dict objects and reprs in a memory made of the input.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "symbols/cpython/layout.h"
#include "symbols/cpython/line_table.h"
#include "symbols/cpython/object_repr.h"
#include "symbols/cpython/python_objects.h"
#include "symbols/elf/elf_file.h"
#include "symbols/pybind11/internals_id.h"

namespace {

// The input is the memory at address 0x1000.
class InputMemory : public pytstates::Memory {
public:
    InputMemory(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    size_t read(uint64_t addr, void* buf, size_t len) const override {
        if (len == 0 || addr < 0x1000 || addr - 0x1000 >= size_) return 0;
        size_t n = std::min<uint64_t>(len, size_ - (addr - 0x1000));
        std::memcpy(buf, data_ + (addr - 0x1000), n);
        return n;
    }

private:
    const uint8_t* data_;
    size_t size_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 4) return 0;
    std::vector<uint8_t> table(data + 4, data + size);
    int firstLine = data[0] | (data[1] << 8);
    int offset = data[2] | (data[3] << 8);
    pytstates::lineFromLnotab(table, firstLine, offset);
    pytstates::lineFromLinetable310(table, firstLine, offset);
    pytstates::lineFromLocationTable(table, firstLine, offset);
    pytstates::InternalsId id;
    pytstates::parseInternalsId(std::string(reinterpret_cast<const char*>(data), size), &id);
    pytstates::buildIdFromNotes(data, size);
    InputMemory memory(data, size);
    for (int minor : {8, 11, 12, 14}) {
        pytstates::CPythonLayout layout;
        pytstates::tableLayout(minor, false, pytstates::Machine::X86_64, &layout);
        pytstates::readPyUnicode(memory, layout, 0x1000);
        pytstates::readPyBytes(memory, layout, 0x1000);
        pytstates::readPyDict(memory, layout, 0x1000);
        pytstates::readTypeName(memory, layout, 0x1000);
        pytstates::ObjectReader objects(memory, layout);
        pytstates::ReprReader(objects).repr(0x1000);
    }
    return 0;
}
