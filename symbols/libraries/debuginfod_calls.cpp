// SPDX-License-Identifier: Apache-2.0
#include "symbols/libraries/debuginfod_calls.h"

#include "symbols/libraries/shared_library.h"
#include "symbols/libraries/sonames.h"

namespace pytstates {

const DebuginfodCalls* debuginfod(std::string* why) {
    static SharedLibrary* library = new SharedLibrary(PYTSTATES_DEBUGINFOD_SONAME);
    static const DebuginfodCalls calls = [] {
        DebuginfodCalls c{};
        library->load(c.begin, "debuginfod_begin");
        library->load(c.end, "debuginfod_end");
        library->load(c.setUserData, "debuginfod_set_user_data");
        library->load(c.getUserData, "debuginfod_get_user_data");
        library->load(c.setProgressfn, "debuginfod_set_progressfn");
        library->load(c.findDebuginfo, "debuginfod_find_debuginfo");
        library->load(c.findExecutable, "debuginfod_find_executable");
        return c;
    }();
    return library->ifLoaded(calls, why);
}

}  // namespace pytstates
