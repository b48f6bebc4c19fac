// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/object_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {
constexpr uint64_t kTpflagsInlineValues = 1u << 2;  // 3.13+
constexpr uint64_t kTpflagsManagedDict = 1u << 4;   // 3.11+
constexpr int64_t kMaxContainer = int64_t(1) << 32;  // a longer list, tuple or deque is not one
constexpr int kMaxBases = 64;
constexpr int kDequeBlock = 64;  // BLOCKLEN in Modules/_collectionsmodule.c, 3.8 - 3.15
constexpr int kDigitBits = 30;   // PYLONG_BITS_IN_DIGIT on LP64 builds

bool plausibleTypeName(const std::string& name) {
    return !name.empty() && name.size() < 128 && std::all_of(name.begin(), name.end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
           });
}
}  // namespace

ObjectReader::ObjectReader(const Memory& memory, const CPythonLayout& layout) : memory_(memory), layout_(layout) {}

std::optional<uint64_t> ObjectReader::type(uint64_t object) const {
    if (!object) return std::nullopt;
    auto type = memory_.readPointer(object + layout_.objectType);
    if (!type || !*type) return std::nullopt;
    return type;
}

std::optional<std::string> ObjectReader::typeNameOfType(uint64_t type) const {
    auto it = typeNames_.find(type);
    if (it != typeNames_.end()) return it->second;
    std::optional<std::string> name;
    if (auto p = memory_.readPointer(type + layout_.typeName); p && *p)
        if (auto text = memory_.readCString(*p, 128); text && plausibleTypeName(*text)) name = text;
    if (typeNames_.size() < 4096) typeNames_[type] = name;
    return name;
}

std::optional<std::string> ObjectReader::typeName(uint64_t object) const {
    auto t = type(object);
    if (!t) return std::nullopt;
    return typeNameOfType(*t);
}

bool ObjectReader::isInstance(uint64_t object, const std::string& tpName) const {
    auto t = type(object);
    for (int depth = 0; t && *t && depth < kMaxBases; ++depth) {
        if (typeNameOfType(*t) == tpName) return true;
        t = memory_.readPointer(*t + layout_.typeBase);
    }
    return false;
}

std::optional<uint64_t> ObjectReader::typeFlags(uint64_t type) const {
    if (layout_.typeFlags == kAbsent) return std::nullopt;
    return memory_.readValue<uint64_t>(type + layout_.typeFlags);
}

std::optional<ObjectReader::InstanceStore> ObjectReader::instanceStore(uint64_t object) const {
    auto t = type(object);
    if (!t) return std::nullopt;
    auto flags = typeFlags(*t);
    if (!flags) return std::nullopt;
    InstanceStore store;
    auto cachedKeys = [&]() -> uint64_t {
        if (layout_.heapTypeCachedKeys == kAbsent) return 0;
        return memory_.readPointer(*t + layout_.heapTypeCachedKeys).value_or(0);
    };
    if (layout_.minor >= 11 && (*flags & kTpflagsManagedDict) && layout_.managedDict != kAbsent) {
        auto word = memory_.readPointer(object + layout_.managedDict);
        if (!word) return std::nullopt;
        if (layout_.minor == 11) {
            // The dict once made (it then owns the values), else the values before it.
            store.dict = *word;
            if (!store.dict && layout_.managedValues != kAbsent) {
                store.values = memory_.readPointer(object + layout_.managedValues).value_or(0);
                if (store.values) store.keys = cachedKeys();
            }
        } else if (layout_.minor == 12) {
            // _PyDictOrValues: the values pointer minus one (so its low bit is set: 3.12's
            // _PyDictOrValues_SetValues stores `(char *)values - 1`), else the dict.
            if (*word & 1) {
                store.values = (*word + 1) + std::max<int64_t>(layout_.dictValuesValues, 0);
                store.keys = cachedKeys();
            } else {
                store.dict = *word;
            }
        } else {
            // 3.13+: a dict once made (sharing the inline values while they stay valid) is the
            // instance's dict; else the values inline after the object, while `valid` says so.
            store.dict = *word;
            if (!store.dict && (*flags & kTpflagsInlineValues)) {
                auto basic = memory_.readValue<int64_t>(*t + layout_.typeBasicsize);
                if (!basic || *basic <= 0 || *basic > (1 << 20)) return std::nullopt;
                uint64_t values = object + *basic;
                auto valid = memory_.readValue<uint8_t>(values + 3);  // PyDictValues.valid
                if (!valid) return std::nullopt;
                if (*valid) {
                    store.values = values + std::max<int64_t>(layout_.dictValuesValues, 0);
                    store.keys = cachedKeys();
                }
            }
        }
        if (store.values && !store.keys) return std::nullopt;
        return store;
    }
    // tp_dictoffset: the dict pointer inside the object; negative: from the end of a variable
    // size object (_PyObject_GetDictPtr).
    auto offset = memory_.readValue<int64_t>(*t + layout_.typeDictoffset);
    if (!offset || *offset == 0) return store;
    int64_t at = *offset;
    if (at < 0) {
        auto size = memory_.readValue<int64_t>(object + layout_.varObjectSize);
        auto basic = memory_.readValue<int64_t>(*t + layout_.typeBasicsize);
        auto item = memory_.readValue<int64_t>(*t + layout_.typeItemsize);
        if (!size || !basic || !item || *basic <= 0 || *item < 0 || *basic > (1 << 20) || *item > (1 << 20)) return std::nullopt;
        int64_t n = *size < 0 ? -*size : *size;
        if (n > kMaxContainer) return std::nullopt;
        int64_t total = (*basic + n * *item + 7) & ~int64_t(7);
        at += total;
    }
    if (at < 0 || at > (1 << 24)) return std::nullopt;
    auto dict = memory_.readPointer(object + at);
    if (!dict) return std::nullopt;
    store.dict = *dict;
    return store;
}

std::optional<std::vector<DictEntry>> ObjectReader::attributes(uint64_t object, size_t maxCount) const {
    auto store = instanceStore(object);
    if (!store) return std::nullopt;
    if (store->dict) return dictItems(store->dict, maxCount);
    if (store->values) return readPyDictKeys(memory_, layout_, store->keys, store->values, maxCount, true);
    return std::vector<DictEntry>{};
}

std::optional<uint64_t> ObjectReader::attribute(uint64_t object, const std::string& name) const {
    auto store = instanceStore(object);
    if (!store) return std::nullopt;
    if (store->dict) return dictValue(store->dict, name);
    if (!store->values) return std::nullopt;
    auto entries = readPyDictKeys(memory_, layout_, store->keys, store->values, 1 << 12, false);
    if (!entries) return std::nullopt;
    for (const auto& e : *entries)
        if (keyIs(e.key, name)) return e.value;
    return std::nullopt;
}

std::optional<int64_t> ObjectReader::integer(uint64_t object) const {
    if (!isInstance(object, "int")) return std::nullopt;
    int64_t ndigits = 0;
    bool negative = false;
    if (layout_.minor <= 11) {
        auto size = memory_.readValue<int64_t>(object + layout_.longTag);
        if (!size) return std::nullopt;
        negative = *size < 0;
        ndigits = negative ? -*size : *size;
    } else {
        // lv_tag: digit count << 3 | sign (0 positive, 1 zero, 2 negative)
        auto tag = memory_.readValue<uint64_t>(object + layout_.longTag);
        if (!tag) return std::nullopt;
        unsigned sign = *tag & 3;
        if (sign == 3) return std::nullopt;
        if (sign == 1) return 0;
        negative = sign == 2;
        ndigits = static_cast<int64_t>(*tag >> 3);
    }
    if (ndigits > 3) return std::nullopt;  // more than 90 bits
    uint32_t digits[3] = {0, 0, 0};
    if (!memory_.readExact(object + layout_.longDigits, digits, static_cast<size_t>(ndigits) * 4)) return std::nullopt;
    unsigned __int128 magnitude = 0;
    for (int64_t i = ndigits - 1; i >= 0; --i) {
        if (digits[i] >> kDigitBits) return std::nullopt;  // not a digit
        magnitude = (magnitude << kDigitBits) | digits[i];
    }
    if (negative ? magnitude > (unsigned __int128)1 << 63 : magnitude > (unsigned __int128)INT64_MAX) return std::nullopt;
    return negative ? static_cast<int64_t>(-magnitude) : static_cast<int64_t>(magnitude);
}

std::optional<double> ObjectReader::floating(uint64_t object) const {
    if (!isInstance(object, "float")) return std::nullopt;
    return memory_.readValue<double>(object + layout_.floatValue);
}

std::optional<std::string> ObjectReader::str(uint64_t object, size_t maxChars, bool* truncated) const {
    if (!isInstance(object, "str")) return std::nullopt;
    auto text = readPyUnicode(memory_, layout_, object, maxChars + 1);
    if (!text) return std::nullopt;
    auto length = memory_.readValue<int64_t>(object + layout_.unicodeLength);
    bool cut = length && static_cast<size_t>(*length) > maxChars;
    if (cut) {  // drop the extra character (one UTF-8 sequence)
        text = readPyUnicode(memory_, layout_, object, maxChars);
        if (!text) return std::nullopt;
    }
    if (truncated) *truncated = cut;
    return text;
}

std::optional<std::vector<uint8_t>> ObjectReader::bytes(uint64_t object, size_t maxSize, bool* truncated) const {
    if (!isInstance(object, "bytes")) return std::nullopt;
    auto size = memory_.readValue<int64_t>(object + layout_.bytesSize);
    if (!size || *size < 0 || *size > kMaxContainer) return std::nullopt;
    size_t n = std::min<size_t>(static_cast<size_t>(*size), maxSize);
    std::vector<uint8_t> out(n);
    if (!memory_.readExact(object + layout_.bytesData, out.data(), n)) return std::nullopt;
    if (truncated) *truncated = n < static_cast<size_t>(*size);
    return out;
}

std::optional<bool> ObjectReader::boolean(uint64_t object) const {
    if (typeName(object) != std::string("bool")) return std::nullopt;
    auto value = integer(object);
    if (!value) return std::nullopt;
    return *value != 0;
}

bool ObjectReader::isNone(uint64_t object) const { return typeName(object) == std::string("NoneType"); }

std::optional<std::vector<uint64_t>> ObjectReader::listItems(uint64_t list, size_t maxCount, size_t* total) const {
    if (!isInstance(list, "list")) return std::nullopt;
    auto size = memory_.readValue<int64_t>(list + layout_.varObjectSize);
    auto items = memory_.readPointer(list + layout_.listItems);
    if (!size || !items || *size < 0 || *size > kMaxContainer || (*size && !*items)) return std::nullopt;
    if (total) *total = static_cast<size_t>(*size);
    std::vector<uint64_t> out(std::min<size_t>(static_cast<size_t>(*size), maxCount));
    if (!memory_.readExact(*items, out.data(), out.size() * 8)) return std::nullopt;
    return out;
}

std::optional<std::vector<uint64_t>> ObjectReader::tupleItems(uint64_t tuple, size_t maxCount, size_t* total) const {
    if (!isInstance(tuple, "tuple")) return std::nullopt;
    auto size = memory_.readValue<int64_t>(tuple + layout_.varObjectSize);
    if (!size || *size < 0 || *size > kMaxContainer) return std::nullopt;
    if (total) *total = static_cast<size_t>(*size);
    std::vector<uint64_t> out(std::min<size_t>(static_cast<size_t>(*size), maxCount));
    if (!memory_.readExact(tuple + layout_.tupleItems, out.data(), out.size() * 8)) return std::nullopt;
    return out;
}

std::optional<std::vector<uint64_t>> ObjectReader::dequeItems(uint64_t deque, size_t maxCount, size_t* total) const {
    if (!isInstance(deque, "collections.deque")) return std::nullopt;
    auto size = memory_.readValue<int64_t>(deque + layout_.varObjectSize);
    auto block = memory_.readPointer(deque + layout_.dequeLeftBlock);
    auto index = memory_.readValue<int64_t>(deque + layout_.dequeLeftIndex);
    if (!size || !block || !index || *size < 0 || *size > kMaxContainer || *index < 0 || *index >= kDequeBlock) return std::nullopt;
    if (total) *total = static_cast<size_t>(*size);
    // block {leftlink; data[64]; rightlink}
    std::vector<uint64_t> out;
    size_t n = std::min<size_t>(static_cast<size_t>(*size), maxCount);
    uint64_t current = *block;
    int64_t i = *index;
    uint64_t data[kDequeBlock + 1];
    bool loaded = false;
    while (out.size() < n) {
        if (!current) return std::nullopt;
        if (!loaded) {
            if (!memory_.readExact(current + 8, data, sizeof data)) return std::nullopt;
            loaded = true;
        }
        out.push_back(data[i]);
        if (++i == kDequeBlock) {
            current = data[kDequeBlock];  // rightlink
            i = 0;
            loaded = false;
        }
    }
    return out;
}

std::optional<std::vector<uint64_t>> ObjectReader::setItems(uint64_t set, size_t maxCount) const {
    if (!isInstance(set, "set") && !isInstance(set, "frozenset")) return std::nullopt;
    auto mask = memory_.readValue<int64_t>(set + layout_.setMask);
    auto table = memory_.readPointer(set + layout_.setTable);
    if (!mask || !table || !*table || *mask < 0 || *mask >= kMaxContainer) return std::nullopt;
    std::vector<uint64_t> out;
    constexpr size_t kChunk = 512;
    constexpr int64_t kMaxScanned = int64_t(1) << 20;  // slots: a garbage mask ends here
    int64_t slots = std::min(*mask + 1, kMaxScanned);
    std::vector<uint64_t> raw;
    uint64_t dummyType = 0;  // the deleted entries' marker, an object of its own type
    for (int64_t first = 0; first < slots && out.size() < maxCount; first += kChunk) {
        size_t n = static_cast<size_t>(std::min<int64_t>(kChunk, slots - first));
        raw.resize(n * 2);  // setentry {key, hash}
        if (!memory_.readExact(*table + first * 16, raw.data(), n * 16)) return std::nullopt;
        for (size_t i = 0; i < n && out.size() < maxCount; ++i) {
            uint64_t key = raw[i * 2];
            if (!key) continue;
            auto t = type(key);
            if (!t || *t == dummyType) continue;
            if (!dummyType && typeNameOfType(*t) == std::nullopt) {
                dummyType = *t;  // "<dummy key> type" does not read as a type name
                continue;
            }
            out.push_back(key);
        }
    }
    return out;
}

std::optional<std::vector<DictEntry>> ObjectReader::dictItems(uint64_t dict, size_t maxCount) const {
    return readPyDict(memory_, layout_, dict, maxCount, true);
}

std::optional<uint64_t> ObjectReader::dictValue(uint64_t dict, const std::string& key) const {
    auto entries = readPyDict(memory_, layout_, dict, 1 << 16, false);
    if (!entries) return std::nullopt;
    for (const auto& e : *entries)
        if (keyIs(e.key, key)) return e.value;
    return std::nullopt;
}

bool ObjectReader::keyIs(uint64_t key, const std::string& name) const {
    // A key equal to name has at most name.size() characters: read whole either way. Any other
    // key differs from name in its first name.size() + 1 characters, or cannot be read.
    if (name.size() + 1 > kKeyChars) return readPyUnicode(memory_, layout_, key, name.size() + 1) == name;
    auto it = keyTexts_.find(key);
    if (it == keyTexts_.end()) {
        auto text = readPyUnicode(memory_, layout_, key, kKeyChars);
        if (keyTexts_.size() >= 4096) return text == name;
        it = keyTexts_.emplace(key, std::move(text)).first;
    }
    return it->second == name;
}

std::optional<uint64_t> ObjectReader::moduleDict(uint64_t module) const {
    auto dict = memory_.readPointer(module + layout_.moduleDict);
    if (!dict || !*dict) return std::nullopt;
    return dict;
}

std::optional<uint64_t> ObjectReader::moduleGlobal(uint64_t sysdict, const std::string& module, const std::string& name) const {
    auto modules = dictValue(sysdict, "modules");
    if (!modules) return std::nullopt;
    auto mod = dictValue(*modules, module);
    if (!mod) return std::nullopt;
    auto dict = moduleDict(*mod);
    if (!dict) return std::nullopt;
    return dictValue(*dict, name);
}

std::optional<std::string> ObjectReader::scalarRepr(uint64_t object, size_t maxLen) const {
    auto name = typeName(object);
    if (!name) return std::nullopt;
    if (*name == "NoneType") return std::string("None");
    if (*name == "bool") {
        auto b = boolean(object);
        if (!b) return std::nullopt;
        return std::string(*b ? "True" : "False");
    }
    if (*name == "int") {
        auto v = integer(object);
        if (!v) return std::nullopt;
        return std::to_string(*v);
    }
    if (*name == "float") {
        auto v = floating(object);
        if (!v) return std::nullopt;
        return pythonFloatRepr(*v);
    }
    if (*name == "str") {
        bool cut = false;
        auto text = str(object, std::max<size_t>(maxLen, 4), &cut);
        if (!text) return std::nullopt;
        return pythonStrRepr(*text) + (cut ? "..." : "");
    }
    if (*name == "bytes") {
        bool cut = false;
        auto raw = bytes(object, std::max<size_t>(maxLen, 4), &cut);
        if (!raw) return std::nullopt;
        return pythonBytesRepr(*raw) + (cut ? "..." : "");
    }
    return std::nullopt;
}

std::optional<std::string> ObjectReader::shortRepr(uint64_t object, size_t maxLen) const {
    if (auto scalar = scalarRepr(object, maxLen)) return scalar;
    auto name = typeName(object);
    if (!name) return std::nullopt;
    return "<" + *name + " at " + hexAddress(object) + ">";
}

std::string pythonFloatRepr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    // The shortest digits that read back as the value, then Python's choice of notation
    // (float_repr_style 'short': exponent form when the decimal point is past 16 digits or
    // before 4 leading zeros).
    char buf[64];
    int precision = 1;
    for (; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*e", precision - 1, value);
        if (std::strtod(buf, nullptr) == value) break;
    }
    std::string text = buf;  // [-]d.ddde[+-]XX
    bool negative = text[0] == '-';
    if (negative) text.erase(0, 1);
    size_t e = text.find('e');
    int exponent = std::atoi(text.c_str() + e + 1);
    std::string digits;
    for (size_t i = 0; i < e; ++i)
        if (text[i] != '.') digits += text[i];
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    int decpt = exponent + 1;  // digits before the decimal point
    std::string out;
    if (decpt > 16 || decpt < -3) {
        out = digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char ex[16];
        std::snprintf(ex, sizeof ex, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        out += ex;
    } else if (decpt <= 0) {
        out = "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
        out = digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
    } else {
        out = digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
    }
    return (negative ? "-" : "") + out;
}

namespace {
void escapeByte(std::string& out, unsigned char c, char quote) {
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
    } else if (c == '\n') {
        out += "\\n";
    } else if (c == '\r') {
        out += "\\r";
    } else if (c == '\t') {
        out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        out += hex;
    } else {
        out += static_cast<char>(c);
    }
}
char quoteFor(const std::string& text) {
    return text.find('\'') != std::string::npos && text.find('"') == std::string::npos ? '"' : '\'';
}
}  // namespace

namespace {
// The characters str.isprintable() calls unprintable beyond ASCII, which repr() escapes: C1
// controls, the separators other than the space (Zs, Zl, Zp), the format characters (Cf: soft
// hyphen, bidirectional marks and overrides, zero-width ones, BOM) and private use (Co).
// Unassigned code points (Cn) need Unicode's tables and are shown as they are.
bool unprintable(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0xa0) || cp == 0xad || (cp >= 0x600 && cp <= 0x605) || cp == 0x61c || cp == 0x6dd ||
           cp == 0x70f || cp == 0x8e2 || cp == 0x1680 || cp == 0x180e || (cp >= 0x2000 && cp <= 0x200f) ||
           (cp >= 0x2028 && cp <= 0x202f) || (cp >= 0x205f && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x206f) || cp == 0x3000 ||
           (cp >= 0xe000 && cp <= 0xf8ff) || cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb) || cp >= 0xf0000 ||
           (cp >= 0xe0000 && cp <= 0xe007f);
}

// The code point of the UTF-8 sequence at s[i] and its length; length 0 for a malformed one.
size_t decodeUtf8(const std::string& s, size_t i, uint32_t* cp) {
    auto b = static_cast<unsigned char>(s[i]);
    size_t n = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
    if (!n || i + n > s.size()) return 0;
    uint32_t v = b & (0x7f >> n);
    for (size_t k = 1; k < n; ++k) {
        auto c = static_cast<unsigned char>(s[i + k]);
        if ((c & 0xc0) != 0x80) return 0;
        v = (v << 6) | (c & 0x3f);
    }
    *cp = v;
    return n;
}
}  // namespace

std::string pythonStrRepr(const std::string& utf8) {
    char quote = quoteFor(utf8);
    std::string out(1, quote);
    for (size_t i = 0; i < utf8.size();) {
        auto c = static_cast<unsigned char>(utf8[i]);
        if (c < 0x80) {
            escapeByte(out, c, quote);
            ++i;
            continue;
        }
        uint32_t cp = 0;
        size_t n = decodeUtf8(utf8, i, &cp);
        if (!n) {  // not UTF-8 (a lone surrogate as the reader kept it): as it is
            out += static_cast<char>(c);
            ++i;
            continue;
        }
        if (unprintable(cp)) {
            char hex[16];
            std::snprintf(hex, sizeof hex, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
            out += hex;
        } else {
            out.append(utf8, i, n);
        }
        i += n;
    }
    return out + quote;
}

std::string pythonBytesRepr(const std::vector<uint8_t>& bytes) {
    std::string text(bytes.begin(), bytes.end());
    char quote = quoteFor(text);
    std::string out = "b";
    out += quote;
    for (unsigned char c : bytes) {
        if (c >= 0x80) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        } else {
            escapeByte(out, c, quote);
        }
    }
    return out + quote;
}

}  // namespace pytstates
