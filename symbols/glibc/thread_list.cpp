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

}  // namespace

std::vector<OsThread> threadsFromGlibcLists(const Target& target) {
    static const std::regex libcName(R"((^|/)libc\.so\.6$)"), ldName(R"((^|/)ld-linux-x86-64\.so\.2$)");
    const LoadedModule *libc = nullptr, *ld = nullptr;
    for (const auto& m : target.modules()) {
        if (m.linkMapNamespace != 0) continue;
        if (!libc && std::regex_search(m.path, libcName)) libc = &m;
        if (!ld && std::regex_search(m.path, ldName)) ld = &m;
    }
    if (!libc || !ld) return {};
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
                t.threadPointer = pd;  // x86_64: the thread pointer is the struct pthread
                t.pthread = pd;
                out.push_back(t);
            }
            node = target.readPointer(node).value_or(0);
        }
    }
    return out;
}

}  // namespace pytstates
