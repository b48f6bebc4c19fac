// SPDX-License-Identifier: Apache-2.0
#include "symbols/target.h"

#include "symbols/modules/debug_session.h"

namespace pytstates {

const DebugSession& Target::debugSession(bool useDwarf) const {
    if (!debugSession_ || debugSession_->useDwarf() != useDwarf) debugSession_ = std::make_shared<DebugSession>(*this, useDwarf);
    return *debugSession_;
}

}  // namespace pytstates
