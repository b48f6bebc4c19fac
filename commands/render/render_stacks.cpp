// SPDX-License-Identifier: Apache-2.0
#include "commands/render/render_stacks.h"

#include "commands/render/text_encoding.h"
#include "commands/render/text_layout.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

// --locals: a frame's arguments, then its other locals, as pystack shows them (one per line,
// each value's repr cut at kMaxLocalText bytes when read).
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

// Every local's value null where only the object's own code could print its repr.
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

}  // namespace

std::string frameWhere(const std::string& before, const PyFrame& f, size_t width) {
    return lineWithPath(before + shown(f.function) + "  ", shown(f.file), ":" + std::to_string(f.line), width);
}

std::string frameCall(const std::string& before, const PyFrame& f, const std::string& after, size_t width) {
    return lineWithPath(before + shown(f.function) + " (", shown(f.file), ":" + std::to_string(f.line) + ")" + after, width);
}

void renderFramesText(std::ostringstream& out, const std::string& indent, const std::vector<PyFrame>& frames, FrameLines style,
                      size_t width) {
    for (size_t i = 0; i < frames.size(); ++i) {
        const PyFrame& f = frames[i];
        if (style == FrameLines::Numbered)
            out << frameCall(indent + "#" + std::to_string(i) + " ", f, "", width) << "\n";
        else
            out << frameWhere(indent, f, width) << "\n";
        renderFrameLocals(out, indent + "    ", f);
    }
}

std::string stateWords(const std::string& state) { return state == "unstarted" ? "not started" : state; }

void renderFrameJson(JsonWriter& w, const PyFrame& f) {
    w.beginObject();
    // 3.11+: the instruction's whole position (PEP 657), as pystack gives it.
    if (f.column >= 0) w.field("column", f.column);
    if (f.column >= 0) w.field("end_column", f.endColumn);
    if (f.endLine >= 0) w.field("end_line", f.endLine);
    w.field("file", f.file);
    w.field("function", f.function);
    w.field("line", f.line);
    if (f.localsRead) localsJson(w, f);
    w.endObject();
}

void renderFramesJson(JsonWriter& w, const std::vector<PyFrame>& frames) {
    w.beginArray();
    for (const auto& f : frames) renderFrameJson(w, f);
    w.endArray();
}

}  // namespace pytstates
