// SPDX-License-Identifier: Apache-2.0
#include "symbols/libraries/capstone_calls.h"

#include "symbols/libraries/shared_library.h"
#include "symbols/libraries/sonames.h"

namespace pytstates {

const CapstoneCalls* capstone(std::string* why) {
    static SharedLibrary* library = new SharedLibrary(PYTSTATES_CAPSTONE_SONAME);
    static const CapstoneCalls calls = [] {
        CapstoneCalls c{};
        library->load(c.open, "cs_open");
        library->load(c.option, "cs_option");
        library->load(c.disasm, "cs_disasm");
        library->load(c.disasmIter, "cs_disasm_iter");
        library->load(c.malloc, "cs_malloc");
        library->load(c.free, "cs_free");
        library->load(c.close, "cs_close");
        return c;
    }();
    return library->ifLoaded(calls, why);
}

}  // namespace pytstates
