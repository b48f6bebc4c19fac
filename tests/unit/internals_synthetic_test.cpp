// SPDX-License-Identifier: Apache-2.0
// pybind11 internals layouts decoded from synthetic memory images built from pybind11's published
// layouts (x86_64, libstdc++, GIL build; shared/research/pybind11-internals.md section 3):
//   v5  pybind11 2.11-2.13 on CPython 3.12+ : static_property_type 408, tstate 432 (inline Py_tss_t), istate 448
//   v11 pybind11 3.0.x                        : same offsets as v5, ID in the 3.x form
//   v12 pybind11 3.1                          : registered_types_py 112, static_property_type 464, tstate 488, istate 496
// v11 is here because pybind11 3.0.x is in no Debian suite, so nothing on these machines runs it;
// v5 (2.13.6) and v12 (3.1.x) also run for real in tests/bindings, whose cores check these tables.
// The record sits in the interpreter's state dict (CPython 3.12 dict and str layouts).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "symbols/cpython/layout.h"
#include "symbols/pybind11/internals_reader.h"

using namespace pytstates;

namespace {

// A sparse address space: writes land in fixed regions, reads outside them fail.
class ImageTarget : public Target {
public:
    uint64_t alloc(size_t size) {
        uint64_t at = next_;
        next_ += (size + 0xfff) & ~uint64_t(0xfff);
        regions_[at] = std::vector<uint8_t>(size);
        return at;
    }
    template <typename T>
    void put(uint64_t addr, T value) {
        write(addr, &value, sizeof value);
    }
    void write(uint64_t addr, const void* data, size_t len) {
        auto it = regions_.upper_bound(addr);
        ASSERT_NE(it, regions_.begin());
        --it;
        ASSERT_LE(addr - it->first + len, it->second.size());
        std::memcpy(it->second.data() + (addr - it->first), data, len);
    }
    uint64_t cstring(const std::string& s) {
        uint64_t at = alloc(s.size() + 1);
        write(at, s.c_str(), s.size() + 1);
        return at;
    }
    size_t read(uint64_t addr, void* buf, size_t len) const override {
        auto it = regions_.upper_bound(addr);
        if (it == regions_.begin()) return 0;
        --it;
        if (addr - it->first >= it->second.size()) return 0;
        size_t n = std::min(len, it->second.size() - (addr - it->first));
        std::memcpy(buf, it->second.data() + (addr - it->first), n);
        return n;
    }
    TargetKind kind() const override { return TargetKind::Core; }
    int pid() const override { return 1; }
    std::string executable() const override { return "image"; }
    const std::vector<OsThread>& threads() const override { return threads_; }
    const std::vector<LoadedModule>& modules() const override { return modules_; }
    const std::vector<std::string>& warnings() const override { return warnings_; }

private:
    uint64_t next_ = 0x10000;
    std::map<uint64_t, std::vector<uint8_t>> regions_;
    std::vector<OsThread> threads_;
    std::vector<LoadedModule> modules_;
    std::vector<std::string> warnings_;
};

struct PublishedLayout {
    int64_t registeredTypesPy, staticPropertyType, tstate, istate;
};

class Image {
public:
    explicit Image(const CPythonLayout& py) : py_(py) {}

    uint64_t typeObject(const std::string& name) {
        uint64_t t = target.alloc(416);
        target.put<uint64_t>(t + py_.typeName, target.cstring(name));
        return t;
    }
    uint64_t str(const std::string& s) {  // compact ASCII str, CPython 3.12
        uint64_t o = target.alloc(py_.unicodeAsciiData + s.size() + 1);
        target.put<int64_t>(o + py_.unicodeLength, static_cast<int64_t>(s.size()));
        target.put<uint32_t>(o + py_.unicodeState, (1u << 2) | (1u << 5) | (1u << 6));  // kind 1, compact, ascii
        target.write(o + py_.unicodeAsciiData, s.c_str(), s.size() + 1);
        return o;
    }
    // A state dict with one entry: id -> capsule -> cell -> internals.
    uint64_t dictWith(const std::string& id, uint64_t capsule) {
        uint64_t keys = target.alloc(64);
        target.put<uint8_t>(keys + py_.dictKeysSize, 3);
        target.put<uint8_t>(keys + py_.dictKeysIndexBytes, 3);  // 8 bytes of indices
        target.put<uint8_t>(keys + py_.dictKeysKind, 1);        // unicode keys: {key, value} entries
        target.put<int64_t>(keys + py_.dictKeysNentries, 1);
        target.put<uint64_t>(keys + py_.dictKeysIndices + 8, str(id));
        target.put<uint64_t>(keys + py_.dictKeysIndices + 16, capsule);
        uint64_t dict = target.alloc(48);
        target.put<uint64_t>(dict + py_.dictKeys, keys);
        return dict;
    }
    uint64_t internals(const PublishedLayout& l, unsigned key, uint64_t istate, bool anchors = true) {
        uint64_t ip = target.alloc(600);
        const char* names[] = {"pybind11_static_property", "pybind11_type", "pybind11_object"};
        for (int i = 0; i < 3; ++i)
            target.put<uint64_t>(ip + l.staticPropertyType + 8 * i, typeObject(anchors ? names[i] : "something_else"));
        target.put<int32_t>(ip + l.tstate, 1);  // Py_tss_t {_is_initialized, _key}
        target.put<uint32_t>(ip + l.tstate + 4, key);
        target.put<uint64_t>(ip + l.istate, istate);
        // registered_types_py: one node {next, PyTypeObject*, vector<type_info*>}
        uint64_t node = target.alloc(40), vec = target.alloc(8), info = target.alloc(16), cpptype = target.alloc(16);
        target.put<uint64_t>(ip + l.registeredTypesPy + 16, node);
        target.put<uint64_t>(node + 8, typeObject("mod.Widget"));
        target.put<uint64_t>(node + 16, vec);
        target.put<uint64_t>(node + 24, vec + 8);
        target.put<uint64_t>(vec, info);
        target.put<uint64_t>(info + 8, cpptype);
        target.put<uint64_t>(cpptype + 8, target.cstring("N4shop6WidgetE"));
        return ip;
    }
    uint64_t capsule(uint64_t internals) {
        uint64_t cell = target.alloc(8);
        target.put<uint64_t>(cell, internals);
        uint64_t cap = target.alloc(48);
        target.put<uint64_t>(cap + py_.objectType, typeObject("PyCapsule"));
        target.put<uint64_t>(cap + py_.capsulePointer, cell);
        return cap;
    }

    ImageTarget target;

private:
    const CPythonLayout& py_;
};

struct Case {
    const char* name;
    std::string id;
    int version;
    PublishedLayout layout;
};

class SyntheticInternals : public ::testing::TestWithParam<Case> {};

TEST_P(SyntheticInternals, DecodesThePublishedLayout) {
    const Case& c = GetParam();
    Runtime rt;
    ASSERT_TRUE(tableLayout(12, false, Machine::X86_64, &rt.layout));
    Image image(rt.layout);
    uint64_t interp = image.target.alloc(64);
    uint64_t ip = image.internals(c.layout, 7, interp);
    Interpreter in;
    in.address = interp;
    in.dict = image.dictWith(c.id, image.capsule(ip));
    rt.interpreters.push_back(in);

    auto records = findInternalsRecords(image.target, rt, true, Pybind11ModuleScan{}).records;
    ASSERT_EQ(records.size(), 1u);
    const auto& r = records[0];
    EXPECT_EQ(r.id.raw, c.id);
    EXPECT_EQ(r.id.version, c.version);
    EXPECT_EQ(r.dictName, "state dict");
    EXPECT_EQ(r.address, ip);
    EXPECT_EQ(r.layout.source, "table");
    EXPECT_EQ(r.layout.tstate, c.layout.tstate);
    ASSERT_TRUE(r.tlsKey.has_value());
    EXPECT_EQ(*r.tlsKey, 7u);
    EXPECT_EQ(r.istate, interp);
    ASSERT_EQ(r.types.size(), 1u);
    EXPECT_EQ(r.types[0].pythonName, "mod.Widget");
    EXPECT_EQ(r.types[0].cppName, "shop::Widget");
}

INSTANTIATE_TEST_SUITE_P(
    PublishedLayouts, SyntheticInternals,
    ::testing::Values(Case{"v5_pybind11_2_11_on_py312", "__pybind11_internals_v5_gcc_libstdcpp_cxxabi1018__", 5, {56, 408, 432, 448}},
                      Case{"v11_pybind11_3_0", "__pybind11_internals_v11_system_libstdcpp_gxx_abi_1xxx_use_cxx11_abi_1__", 11, {56, 408, 432, 448}},
                      Case{"v12_pybind11_3_1", "__pybind11_internals_v12_system_libstdcpp_gxx_abi_1xxx_use_cxx11_abi_1__", 12, {112, 464, 488, 496}}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// An STL whose containers have other sizes moves every member; the type anchor finds it anyway.
TEST(SyntheticInternalsAnchor, FindsTstateNextToTheTypeAnchorsAtAnUnknownOffset) {
    Runtime rt;
    ASSERT_TRUE(tableLayout(12, false, Machine::X86_64, &rt.layout));
    Image image(rt.layout);
    uint64_t interp = image.target.alloc(64);
    PublishedLayout shifted{56, 376, 400, 416};  // v11 members shifted by 32 bytes
    uint64_t ip = image.internals(shifted, 3, interp);
    Interpreter in;
    in.address = interp;
    in.dict = image.dictWith("__pybind11_internals_v11_system_libcpp_gxx_abi_1xxx_use_cxx11_abi_1__", image.capsule(ip));
    rt.interpreters.push_back(in);
    auto records = findInternalsRecords(image.target, rt, false, Pybind11ModuleScan{}).records;
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].layout.source, "anchor");
    EXPECT_EQ(records[0].layout.tstate, 400);
    ASSERT_TRUE(records[0].tlsKey.has_value());
    EXPECT_EQ(*records[0].tlsKey, 3u);
    EXPECT_EQ(records[0].istate, interp);
}

TEST(SyntheticInternalsAnchor, RefusesAnObjectWithoutThePybind11Types) {
    Runtime rt;
    ASSERT_TRUE(tableLayout(12, false, Machine::X86_64, &rt.layout));
    Image image(rt.layout);
    uint64_t interp = image.target.alloc(64);
    uint64_t ip = image.internals({56, 408, 432, 448}, 3, interp, /*anchors=*/false);
    Interpreter in;
    in.address = interp;
    in.dict = image.dictWith("__pybind11_internals_v5_gcc_libstdcpp_cxxabi1018__", image.capsule(ip));
    rt.interpreters.push_back(in);
    auto records = findInternalsRecords(image.target, rt, false, Pybind11ModuleScan{}).records;
    ASSERT_EQ(records.size(), 1u);
    EXPECT_FALSE(records[0].tlsKey.has_value());
    EXPECT_FALSE(records[0].problem.empty());
}

}  // namespace
