// SPDX-License-Identifier: Apache-2.0
// A shared library opened when it is first needed (dlopen), not when pytstates starts: libdebuginfod
// (with libcurl, GnuTLS, Kerberos, LDAP beneath it) and libcapstone cost 9 MiB of resident memory
// and 7 ms at every start, and only a fetch from debuginfod or a recording uses them.
#pragma once

#include <string>

namespace pytstates {

class SharedLibrary {
public:
    // Never closed: what it hands out (functions, a client's callbacks) may be used until exit.
    explicit SharedLibrary(const char* soname);
    SharedLibrary(const SharedLibrary&) = delete;
    SharedLibrary& operator=(const SharedLibrary&) = delete;

    // Every named symbol found: false, with error() saying which is missing, or why the library
    // did not load.
    bool loaded() const { return handle_ != nullptr && error_.empty(); }
    const std::string& error() const { return error_; }

    // `calls` (the table of functions loaded from it) when every one was found; else null, and
    // *why (if given) says what is missing.
    template <typename Calls>
    const Calls* ifLoaded(const Calls& calls, std::string* why) const {
        if (loaded()) return &calls;
        if (why) *why = error_;
        return nullptr;
    }

    // Sets `slot` to the named function; null (and error() set) when it is missing.
    template <typename F>
    void load(F*& slot, const char* name) {
        slot = reinterpret_cast<F*>(address(name));
    }

private:
    void* address(const char* name);

    std::string soname_;
    void* handle_ = nullptr;
    std::string error_;
};

}  // namespace pytstates
