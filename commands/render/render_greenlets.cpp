// SPDX-License-Identifier: Apache-2.0
#include "commands/render/render_greenlets.h"

#include <algorithm>
#include <set>
#include <vector>

#include "commands/render/render_stacks.h"
#include "commands/render/text_encoding.h"
#include "commands/render/text_layout.h"
#include "symbols/text/base_name.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

// "greenlets (50): running 0x... (main), 47 suspended, 1 dead, 1 not started"
std::string greenletCounts(const std::vector<const GreenletInfo*>& greenlets) {
    std::ostringstream line;
    line << "greenlets (" << greenlets.size() << "):";
    const char* sep = " ";
    for (const auto* g : greenlets)
        if (g->state == "running") {
            line << sep << "running " << hexAddress(g->address) << (g->main ? " (main)" : "");
            sep = ", ";
        }
    for (const char* state : {"suspended", "dead", "unstarted"}) {
        size_t n = 0;
        for (const auto* g : greenlets) n += g->state == state;
        if (n) line << sep << n << " " << stateWords(state);
        if (n) sep = ", ";
    }
    return line.str();
}

// Running first, then suspended, dead, not started; in the collector's order within each.
void renderGreenletList(std::ostringstream& out, std::vector<const GreenletInfo*> greenlets, const std::string& indent,
                        size_t width, size_t shownFrames, bool withThread = false) {
    auto rank = [](const GreenletInfo* g) {
        return g->state == "running" ? 0 : g->state == "suspended" ? 1 : g->state == "dead" ? 2 : 3;
    };
    std::stable_sort(greenlets.begin(), greenlets.end(), [&](const GreenletInfo* a, const GreenletInfo* b) { return rank(a) < rank(b); });
    for (const auto* g : greenlets) {
        out << indent << hexAddress(g->address) << "  " << stateWords(g->state) << (g->main ? "  main" : "");
        if (withThread) out << "  " << (g->lwp ? "LWP " + std::to_string(g->lwp) : std::string("no living thread"));
        if (g->parent) out << "  parent " << hexAddress(g->parent);
        if (g->typeName != "greenlet.greenlet") out << "  [" << shown(g->typeName) << "]";
        if (g->state == "running") out << "  (its frames are the thread state's)";
        out << "\n";
        if (!g->note.empty()) out << indent << "    note: " << shown(g->note) << "\n";
        renderFramesText(out, indent + "    ", g->frames, FrameLines::Numbered, width, shownFrames);
    }
}

void addressOrNull(JsonWriter& w, std::string_view k, uint64_t v) { w.fieldOrNull(k, v != 0, hexAddress(v)); }
void stringOrNull(JsonWriter& w, std::string_view k, const std::string& v) { w.fieldOrNull(k, !v.empty(), v); }

// A greenlet; those under no thread state also say their thread ("lwp", null when none).
void greenletJson(JsonWriter& w, const GreenletInfo& g, bool withLwp, size_t shownFrames) {
    w.beginObject();
    w.field("address", hexAddress(g.address));
    renderFramesJson(w, g.frames, shownFrames);
    if (withLwp) w.fieldOrNull("lwp", g.lwp != 0, g.lwp);
    w.field("main", g.main);
    if (!g.note.empty()) w.field("note", g.note);
    addressOrNull(w, "parent", g.parent);
    w.field("state", g.state);
    w.field("type", g.typeName);
    w.endObject();
}

}  // namespace

void renderGreenletModule(std::ostringstream& out, const Report& report, const GreenletScan& scan, bool list, size_t width,
                          size_t shownFrames) {
    std::set<int> lwps;
    for (const auto& t : scan.threads) lwps.insert(t.lwp);
    out << "  greenlet " << (scan.version.empty() ? "?" : shown(scan.version)) << " (" << shown(baseName(scan.module)) << ", "
        << (scan.layoutSource == "dwarf" ? "layout from DWARF" : scan.layoutSource == "table" ? "built-in layout" : "no layout")
        << "): " << plural(scan.greenlets.size(), "greenlet") << " on " << plural(lwps.size(), "thread") << ", "
        << plural(scan.gcObjects, "object") << " on the collector's lists\n";
    if (!scan.problem.empty()) out << "  note: " << shown(scan.problem) << "\n";
    if (scan.rejected)
        out << "  note: " << plural(scan.rejected, "object") << " of greenlet's type did not point back from "
            << (scan.rejected == 1 ? "its" : "their") << " implementation\n";
    auto unowned = report.greenletsWithoutTstate(scan);
    if (unowned.empty()) return;
    out << "  under no thread state: " << greenletCounts(unowned) << "\n";
    if (list) renderGreenletList(out, unowned, "    ", width, shownFrames, true);
}

void renderTstateGreenlets(std::ostringstream& out, const GreenletScan& scan, int lwp, uint64_t interp, bool list, size_t width,
                           size_t shownFrames) {
    std::vector<const GreenletInfo*> mine;
    for (const auto& g : scan.greenlets)
        if (g.lwp == lwp && g.interp == interp) mine.push_back(&g);
    if (mine.empty()) return;
    out << "        " << greenletCounts(mine) << (list ? "" : "  (--greenlets lists them)") << "\n";
    if (list) renderGreenletList(out, mine, "          ", width, shownFrames);
}

// The runtime's greenlet module: what was read, how, and the greenlets under no thread state.
void renderGreenletScanJson(JsonWriter& w, const Report& report, const GreenletScan& scan, size_t shownFrames) {
    w.beginObject();
    w.field("count", scan.greenlets.size());
    w.field("gc_objects", scan.gcObjects);
    stringOrNull(w, "layout", scan.layoutSource);
    w.field("module", scan.module);
    if (!scan.problem.empty()) w.field("problem", scan.problem);
    if (scan.rejected) w.field("rejected", scan.rejected);
    w.key("threads");
    w.beginArray();
    for (const auto& t : scan.threads) {
        w.beginObject();
        addressOrNull(w, "current_greenlet", t.currentGreenlet);
        w.field("lwp", t.lwp);
        w.field("main_greenlet", hexAddress(t.mainGreenlet));
        w.field("thread_state", hexAddress(t.threadState));
        w.endObject();
    }
    w.endArray();
    stringOrNull(w, "version", scan.version);
    w.key("without_tstate");
    w.beginArray();
    for (const auto* g : report.greenletsWithoutTstate(scan)) greenletJson(w, *g, true, shownFrames);
    w.endArray();
    w.endObject();
}

void renderTstateGreenletsJson(JsonWriter& w, const GreenletScan& scan, std::optional<int> lwp, uint64_t interp, size_t shownFrames) {
    w.beginArray();
    for (const auto& g : scan.greenlets)
        if (lwp && g.lwp == *lwp && g.interp == interp) greenletJson(w, g, false, shownFrames);
    w.endArray();
}

}  // namespace pytstates
