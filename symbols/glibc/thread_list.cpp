// SPDX-License-Identifier: Apache-2.0
#include "symbols/glibc/thread_list.h"

#include <regex>
#include <set>

#include "symbols/modules/module_files.h"

namespace pytstates {

namespace {

constexpr size_t kMaxThreads = 1 << 16;

std::optional<uint32_t> descriptorOffset(const Target& target, const LoadedModule& libc, const char* name) {
    auto sym = findModuleSymbol(libc, name);
    if (!sym) return std::nullopt;
    uint32_t raw[3];
    if (!target.readExact(libc.bias + sym->value, raw, sizeof raw)) return std::nullopt;
    return raw[2];
}

bool isLibc(const std::string& path) {
    static const std::regex libcName(R"((^|/)libc\.so\.6$)");
    return std::regex_search(path, libcName);
}

// The dynamic linker of any machine glibc runs on: ld-linux-x86-64.so.2, ld-linux-aarch64.so.1.
bool isDynamicLinker(const std::string& path) {
    static const std::regex ldName(R"((^|/)ld-linux[-a-z0-9_]*\.so\.[12]$)");
    return std::regex_search(path, ldName);
}

const LoadedModule* libcOf(const Target& target) {
    for (const auto& m : target.modules())
        if (m.linkMapNamespace == 0 && isLibc(m.path)) return &m;
    return nullptr;
}

}  // namespace

uint64_t glibcSizeofPthread(const Target& target) {
    const LoadedModule* libc = libcOf(target);
    if (!libc) return 0;
    auto sym = findModuleSymbol(*libc, "_thread_db_sizeof_pthread");
    if (!sym) return 0;
    return target.readValue<uint32_t>(libc->bias + sym->value).value_or(0);
}

std::vector<OsThread> threadsFromGlibcLists(const Target& target) {
    const LoadedModule* libc = libcOf(target);
    const LoadedModule* ld = nullptr;
    for (const auto& m : target.modules())
        if (!ld && m.linkMapNamespace == 0 && isDynamicLinker(m.path)) ld = &m;
    if (!libc || !ld) return {};
    const Arch& arch = target.arch();
    uint64_t sizeofPthread = glibcSizeofPthread(target);
    if (arch.tlsVariantI && !sizeofPthread) return {};
    auto rtld = findModuleSymbol(*ld, "_rtld_global");
    auto used = descriptorOffset(target, *libc, "_thread_db_rtld_global__dl_stack_used");
    auto user = descriptorOffset(target, *libc, "_thread_db_rtld_global__dl_stack_user");
    auto list = descriptorOffset(target, *libc, "_thread_db_pthread_list");
    auto tid = descriptorOffset(target, *libc, "_thread_db_pthread_tid");
    if (!rtld || !used || !user || !list || !tid) return {};
    std::vector<OsThread> out;
    std::set<uint64_t> seen;
    for (uint32_t headOffset : {*used, *user}) {
        uint64_t head = ld->bias + rtld->value + headOffset;
        uint64_t node = target.readPointer(head).value_or(0);
        while (node && node != head && out.size() < kMaxThreads && seen.insert(node).second) {
            uint64_t pd = node - *list;
            auto lwp = target.readValue<int32_t>(pd + *tid);
            if (lwp && *lwp > 0) {
                OsThread t;
                t.lwp = *lwp;
                t.pthread = pd;
                t.threadPointer = arch.threadPointerFromPthread(pd, sizeofPthread);
                out.push_back(t);
            }
            node = target.readPointer(node).value_or(0);
        }
    }
    return out;
}

}  // namespace pytstates
