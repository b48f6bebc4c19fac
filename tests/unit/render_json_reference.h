// SPDX-License-Identifier: Apache-2.0
// The JSON renderer before the streaming writer: a nlohmann tree and its dump(2).
#pragma once

#include <string>

#include "commands/render/render.h"

namespace pytstates::reference {

std::string renderJsonTree(const Report& report, const RenderOptions& options);

}  // namespace pytstates::reference
