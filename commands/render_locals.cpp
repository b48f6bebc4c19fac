// SPDX-License-Identifier: Apache-2.0
#include "commands/render_locals.h"

#include "commands/text_encoding.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

void localsJson(JsonWriter& w, const PyFrame& f) {
    w.key("locals");
    w.beginArray();
    for (const auto& l : f.locals) {
        w.beginObject();
        w.field("address", hexAddress(l.address));
        w.field("kind", l.kind);
        w.field("name", l.name);
        w.fieldOrNull("type", !l.type.empty(), l.type);
        w.fieldOrNull("value", l.value.has_value(), l.value.value_or(""));
        w.endObject();
    }
    w.endArray();
}

void renderFrameLocals(std::ostringstream& out, const std::string& indent, const PyFrame& f) {
    if (!f.localsRead) return;
    bool args = false, locals = false;
    for (const auto& l : f.locals) {
        bool arg = l.kind == "arg";
        if (arg && !args) out << indent << "Arguments:\n";
        if (!arg && !locals) out << indent << "Locals:\n";
        (arg ? args : locals) = true;
        out << indent << "  " << shown(l.name) << " = " << shown(l.shown) << "\n";
    }
    if (f.locals.empty()) out << indent << "(no locals)\n";
}

}  // namespace pytstates
