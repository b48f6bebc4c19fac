// SPDX-License-Identifier: Apache-2.0
#include "symbols/libraries/shared_library.h"

#include <dlfcn.h>

namespace pytstates {

SharedLibrary::SharedLibrary(const char* soname) : soname_(soname) {
    handle_ = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
        const char* why = dlerror();
        error_ = why ? why : soname_ + ": cannot be loaded";
    }
}

void* SharedLibrary::address(const char* name) {
    if (!handle_) return nullptr;
    void* found = dlsym(handle_, name);
    if (!found && error_.empty()) error_ = soname_ + " has no " + name;
    return found;
}

}  // namespace pytstates
