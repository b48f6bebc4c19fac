// SPDX-License-Identifier: Apache-2.0
#include "symbols/cxxabi/thrown_exception.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <set>

#include "symbols/modules/module_files.h"

namespace pytstates {

namespace {

constexpr uint64_t kGnuCxx = 0x474e5543432b2b00ull;  // "GNUCC++\0": a primary exception (big-endian text)
constexpr uint64_t kUnwindHeaderSize = 32;           // struct _Unwind_Exception (aligned to 16)
constexpr uint64_t kTypeToUnwindHeader = 80;         // __cxa_exception: exceptionType ... unwindHeader (LP64)
constexpr size_t kMaxBases = 16;
constexpr size_t kMaxMessage = 4096;

std::string demangleType(const std::string& name) {
    std::string mangled = name.empty() || name[0] != '*' ? name : name.substr(1);  // '*': a local type
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
    return status == 0 && out ? std::string(out.get()) : mangled;
}

// The vtable address std::type_info objects of classes with one public base point at
// (__cxxabiv1::__si_class_type_info's, two words in), from libstdc++'s dynamic symbols.
std::optional<uint64_t> siClassTypeInfoVptr(const Target& target) {
    for (const auto& m : target.modules()) {
        if (m.path.find("libstdc++") == std::string::npos && m.path.find("libc++") == std::string::npos) continue;
        if (auto sym = findModuleSymbol(m, "_ZTVN10__cxxabiv120__si_class_type_infoE")) return m.bias + sym->value + 16;
    }
    return std::nullopt;
}

bool plausibleTypeName(const std::string& s) {
    if (s.empty() || s.size() > 512) return false;
    for (char c : s)
        if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7e) return false;
    return true;
}

std::optional<ThrownException> fromUnwindHeader(const Target& target, uint64_t header) {
    auto type = target.readPointer(header - kTypeToUnwindHeader);
    if (!type || !*type) return std::nullopt;
    auto namePtr = target.readPointer(*type + 8);
    if (!namePtr) return std::nullopt;
    auto name = target.readCString(*namePtr, 512);
    if (!name || !plausibleTypeName(*name)) return std::nullopt;
    ThrownException e;
    e.object = header + kUnwindHeaderSize;
    e.typeInfo = *type;
    e.type = demangleType(*name);
    // Single-inheritance bases, through __si_class_type_info::__base_type.
    if (auto si = siClassTypeInfoVptr(target)) {
        uint64_t info = *type;
        for (size_t i = 0; i < kMaxBases; ++i) {
            auto vptr = target.readPointer(info);
            if (!vptr || *vptr != *si) break;
            auto base = target.readPointer(info + 16);
            if (!base || !*base) break;
            auto baseName = target.readPointer(*base + 8);
            auto text = baseName ? target.readCString(*baseName, 512) : std::nullopt;
            if (!text || !plausibleTypeName(*text)) break;
            e.bases.push_back(demangleType(*text));
            info = *base;
        }
    }
    // std::runtime_error and std::logic_error (and every class derived from them) keep what() in
    // a libstdc++ __cow_string: one pointer to the characters, right after the vtable pointer.
    std::set<std::string> withString = {"std::runtime_error", "std::logic_error"};
    bool keeps = withString.count(e.type) != 0;
    for (const auto& b : e.bases) keeps = keeps || withString.count(b) != 0;
    if (keeps)
        if (auto chars = target.readPointer(e.object + 8))
            if (auto text = target.readCString(*chars, kMaxMessage)) e.message = *text;
    return e;
}

}  // namespace

std::optional<ThrownException> findThrownException(const Target& target, const OsThread& thread, size_t maxBytes) {
    if (!thread.sp) return std::nullopt;
    std::vector<uint64_t> words(maxBytes / 8);
    size_t got = target.read(thread.sp, words.data(), words.size() * 8) / 8;
    std::set<uint64_t> tried;
    for (size_t i = 0; i < got; ++i) {
        uint64_t v = words[i];
        if (v < 4096 || (v & 7)) continue;
        // A pointer to the unwind header, or to the thrown object just after it.
        for (uint64_t header : {v, v - kUnwindHeaderSize}) {
            if (!tried.insert(header).second) continue;
            auto cls = target.readValue<uint64_t>(header);
            if (!cls || *cls != kGnuCxx) continue;
            if (auto e = fromUnwindHeader(target, header)) return e;
        }
    }
    return std::nullopt;
}

}  // namespace pytstates
