// SPDX-License-Identifier: Apache-2.0
// The libdebuginfod functions pytstates calls, from the library opened at first use (see
// shared_library.h): only when $DEBUGINFOD_URLS names servers.
#pragma once

#include <elfutils/debuginfod.h>

#include <string>

namespace pytstates {

struct DebuginfodCalls {
    decltype(&debuginfod_begin) begin;
    decltype(&debuginfod_end) end;
    decltype(&debuginfod_set_user_data) setUserData;
    decltype(&debuginfod_get_user_data) getUserData;
    decltype(&debuginfod_set_progressfn) setProgressfn;
    decltype(&debuginfod_find_debuginfo) findDebuginfo;
    decltype(&debuginfod_find_executable) findExecutable;
};

// Null when libdebuginfod cannot be loaded; *why (if given) then says why.
const DebuginfodCalls* debuginfod(std::string* why = nullptr);

}  // namespace pytstates
