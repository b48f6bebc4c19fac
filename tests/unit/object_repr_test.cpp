// SPDX-License-Identifier: Apache-2.0
// ReprReader on objects built in this process's memory: bounds (bytes, depth, cycles), garbage
// (a type whose base is itself, unreadable items), and unicode_repr's quotes and escapes. The
// reprs of real objects are held against CPython's own repr() in tests/objects/values_test.py.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "own_memory.h"
#include "symbols/cpython/object_repr.h"

namespace pytstates {
namespace {

uint64_t addr(const void* p) { return reinterpret_cast<uint64_t>(p); }
constexpr uint64_t kObjectRepr = 0x1000, kListRepr = 0x2000, kIntRepr = 0x3000;

struct Fixture {
    OwnMemory memory;
    CPythonLayout layout;
    std::vector<uint64_t> object = std::vector<uint64_t>(128, 0), list = std::vector<uint64_t>(128, 0),
                          integer = std::vector<uint64_t>(128, 0);
    Fixture() {
        EXPECT_TRUE(tableLayout(11, false, Machine::X86_64, &layout));
        make(object, "object", kObjectRepr, 0);
        make(list, "list", kListRepr, addr(object.data()));
        make(integer, "int", kIntRepr, addr(object.data()));
    }
    // A static type: tp_name, tp_repr (a made-up function address), tp_base.
    void make(std::vector<uint64_t>& type, const char* name, uint64_t repr, uint64_t base) {
        type[layout.typeName / 8] = addr(name);
        type[(layout.typeName + 64) / 8] = repr;
        type[layout.typeBase / 8] = base;
    }
    std::vector<uint64_t> listOf(std::vector<uint64_t>& items) {
        std::vector<uint64_t> l(8, 0);
        l[layout.objectType / 8] = addr(list.data());
        l[layout.varObjectSize / 8] = items.size();
        l[layout.listItems / 8] = addr(items.data());
        return l;
    }
    std::vector<uint64_t> intOf(uint32_t digit) {
        std::vector<uint64_t> i(8, 0);
        i[layout.objectType / 8] = addr(integer.data());
        i[layout.longTag / 8] = digit ? 1 : 0;  // <= 3.11: ob_size is the digit count
        i[layout.longDigits / 8] = digit;
        return i;
    }
};

TEST(ObjectRepr, ListsIntsCyclesAndBounds) {
    Fixture f;
    ObjectReader objects(f.memory, f.layout);
    ReprReader reprs(objects);
    auto started = std::chrono::steady_clock::now();

    auto one = f.intOf(1), seven = f.intOf(7);
    std::vector<uint64_t> items = {addr(one.data()), addr(seven.data()), 0};
    auto l = f.listOf(items);
    items[2] = addr(l.data());  // the list holds itself: Python's "[...]"
    auto r = reprs.repr(addr(l.data()));
    EXPECT_EQ(r.text, "[1, 7, [...]]");
    EXPECT_TRUE(r.exact);
    EXPECT_TRUE(r.builtin);
    EXPECT_EQ(r.type, "list");

    // An unreadable item: said so, the repr no longer exact.
    items[2] = 0x10;
    r = reprs.repr(addr(l.data()));
    EXPECT_EQ(r.text, "[1, 7, <unreadable object at 0x10>]");
    EXPECT_FALSE(r.exact);
    EXPECT_TRUE(r.readable);
    EXPECT_FALSE(reprs.repr(0x10).readable);

    // 2^20 items, each itself a list of them: cut at maxBytes, never more read than shown.
    std::vector<uint64_t> many(1 << 20, 0);
    auto big = f.listOf(many);
    std::fill(many.begin(), many.end(), addr(big.data()));
    r = reprs.repr(addr(big.data()));
    EXPECT_EQ(r.text.rfind("[[...], [...], [...], ", 0), 0u);
    EXPECT_EQ(r.text.substr(r.text.size() - 3), "...");
    EXPECT_LE(r.text.size(), 1024u);
    EXPECT_GE(r.text.size(), 1018u);
    EXPECT_TRUE(r.truncated);
    EXPECT_FALSE(r.exact);

    // 100 lists nested: maxDepth of them, then reprlib's marker.
    std::vector<std::vector<uint64_t>> slots(100, std::vector<uint64_t>(1, 0));
    std::vector<std::vector<uint64_t>> nested;
    nested.reserve(100);
    for (size_t i = 0; i < 100; ++i) nested.push_back(f.listOf(slots[i]));
    for (size_t i = 0; i + 1 < 100; ++i) slots[i][0] = addr(nested[i + 1].data());
    slots[99][0] = addr(one.data());
    ReprLimits limits;
    limits.maxDepth = 3;
    r = reprs.repr(addr(nested[0].data()), limits);
    EXPECT_EQ(r.text, "[[[[...]]]]");
    EXPECT_TRUE(r.truncated);

    // A subclass of list keeping list's tp_repr prints as a list; one with its own repr does not.
    std::vector<uint64_t> sub(128, 0);
    f.make(sub, "MyList", kListRepr, addr(f.list.data()));
    sub[f.layout.typeFlags / 8] = 1u << 9;  // a heap type
    l[f.layout.objectType / 8] = addr(sub.data());
    items[2] = addr(one.data());
    EXPECT_EQ(reprs.repr(addr(l.data())).text, "[1, 7, 1]");
    std::vector<uint64_t> own(128, 0);
    f.make(own, "Own", 0x4000, addr(f.list.data()));
    own[f.layout.typeFlags / 8] = 1u << 9;
    l[f.layout.objectType / 8] = addr(own.data());
    r = reprs.repr(addr(l.data()));
    char expected[64];
    std::snprintf(expected, sizeof expected, "<Own object at 0x%llx>", static_cast<unsigned long long>(addr(l.data())));
    EXPECT_EQ(r.text, expected);
    EXPECT_FALSE(r.builtin);

    // A type whose base is itself: classified, no loop.
    std::vector<uint64_t> loop(128, 0);
    f.make(loop, "Loop", 0x5000, addr(loop.data()));
    std::vector<uint64_t> looped(4, 0);
    looped[f.layout.objectType / 8] = addr(loop.data());
    EXPECT_EQ(reprs.kind(addr(looped.data())), ReprReader::Kind::Other);

    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(ObjectRepr, CFunctionsAndBoundMethods) {
    Fixture f;
    ObjectReader objects(f.memory, f.layout);
    ReprReader reprs(objects);
    std::vector<uint64_t> str(128, 0), function(128, 0), method(128, 0), cfunction(128, 0);
    f.make(str, "str", 0x6000, addr(f.object.data()));
    f.make(function, "function", 0x7000, addr(f.object.data()));
    f.make(method, "method", 0x8000, addr(f.object.data()));
    f.make(cfunction, "builtin_function_or_method", 0x9000, addr(f.object.data()));
    const int64_t fields = f.layout.objectType + 8;  // after PyObject_HEAD

    // A compact ASCII str "f" (3.11: interned:2, kind:3, compact:1, ascii:1), a function named by it.
    std::vector<uint64_t> name(16, 0);
    name[f.layout.objectType / 8] = addr(str.data());
    name[f.layout.unicodeLength / 8] = 1;
    name[f.layout.unicodeState / 8] = (1u << 2) | (1u << 5) | (1u << 6);
    reinterpret_cast<char*>(name.data())[f.layout.unicodeAsciiData] = 'f';
    std::vector<uint64_t> func(32, 0);
    func[f.layout.objectType / 8] = addr(function.data());
    func[(fields + 24) / 8] = addr(name.data());  // func_qualname (3.10+)

    // Two bound methods, each the other's self: bounded by maxDepth, no loop.
    std::vector<uint64_t> m1(8, 0), m2(8, 0);
    for (auto* m : {&m1, &m2}) {
        (*m)[f.layout.objectType / 8] = addr(method.data());
        (*m)[fields / 8] = addr(func.data());
    }
    m1[fields / 8 + 1] = addr(m2.data());
    m2[fields / 8 + 1] = addr(m1.data());
    auto r = reprs.repr(addr(m1.data()));
    EXPECT_EQ(r.text.rfind("<bound method f of <bound method f of <", 0), 0u) << r.text;
    EXPECT_NE(r.text.find("<method object at 0x"), std::string::npos) << r.text;
    EXPECT_TRUE(r.truncated);
    EXPECT_FALSE(r.exact);
    EXPECT_TRUE(r.builtin);

    // meth_repr: no self (or a module) a function; else a method of self's type.
    std::vector<uint64_t> def(4, 0), cf(8, 0);
    def[0] = addr("len");
    cf[f.layout.objectType / 8] = addr(cfunction.data());
    cf[fields / 8] = addr(def.data());
    EXPECT_EQ(reprs.repr(addr(cf.data())).text, "<built-in function len>");
    auto seven = f.intOf(7);
    cf[fields / 8 + 1] = addr(seven.data());
    char expected[96];
    std::snprintf(expected, sizeof expected, "<built-in method len of int object at 0x%llx>",
                  static_cast<unsigned long long>(addr(seven.data())));
    EXPECT_EQ(reprs.repr(addr(cf.data())).text, expected);
    // A name that is no C identifier (garbage, a control byte) is not printed.
    def[0] = addr("l\x1b[31men");
    r = reprs.repr(addr(cf.data()));
    EXPECT_EQ(r.text.rfind("<unreadable builtin_function_or_method at 0x", 0), 0u) << r.text;
    EXPECT_FALSE(r.exact);
}

TEST(ObjectRepr, UnicodeReprAsCPython) {
    EXPECT_EQ(pythonUnicodeRepr(U"abc"), "'abc'");
    EXPECT_EQ(pythonUnicodeRepr(U"it's"), "\"it's\"");
    EXPECT_EQ(pythonUnicodeRepr(U"it's \"x\""), "'it\\'s \"x\"'");
    EXPECT_EQ(pythonUnicodeRepr(U"a\tb\nc\rd\\"), "'a\\tb\\nc\\rd\\\\'");
    EXPECT_EQ(pythonUnicodeRepr(std::u32string(U"\x00\x1f\x7f", 3)), "'\\x00\\x1f\\x7f'");
    // Lone surrogates (a surrogateescape'd file name's bytes): \udcff, as Python writes them.
    EXPECT_EQ(pythonUnicodeRepr(U"\xdcff\xd800"), "'\\udcff\\ud800'");
    EXPECT_EQ(pythonUnicodeRepr(U"\x85\xa0\x200b\x2028\U000e0001"), "'\\x85\\xa0\\u200b\\u2028\\U000e0001'");
    // Printable characters stay themselves (UTF-8).
    EXPECT_EQ(pythonUnicodeRepr(U"caf\xe9 \x20ac \U0001f600"), "'caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80'");
    EXPECT_TRUE(pythonIsPrintable(U'\xe9'));
    EXPECT_FALSE(pythonIsPrintable(U'\xad'));  // soft hyphen: Cf
    EXPECT_FALSE(pythonIsPrintable(0x10ffff));
    EXPECT_TRUE(pythonIsPrintable(U' '));
    EXPECT_FALSE(pythonIsPrintable(0x3000));  // ideographic space: Zs
}

}  // namespace
}  // namespace pytstates
