// SPDX-License-Identifier: Apache-2.0
#include "symbols/native/dwarf_values.h"

#include <dwarf.h>

#include <cstring>
#include <string>

namespace pytstates {

namespace {

constexpr size_t kMaxStack = 64;      // DWARF expression stack depth
constexpr int kMaxCallSiteSearch = 4096;  // DIEs visited looking for a call site

std::optional<uint64_t> reg(const std::vector<std::optional<uint64_t>>& regs, uint64_t n) {
    return n < regs.size() ? regs[n] : std::nullopt;
}

// Follows typedefs and qualifiers to the underlying type.
bool resolveType(Dwarf_Die* die) {
    for (int guard = 0; guard < 16; ++guard) {
        int tag = dwarf_tag(die);
        if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type && tag != DW_TAG_restrict_type)
            return true;
        Dwarf_Attribute attr;
        if (!dwarf_attr_integrate(die, DW_AT_type, &attr) || !dwarf_formref_die(&attr, die)) return false;
    }
    return false;
}

// The type the pointer-typed DIE points to (resolved); false when the DIE's type is no pointer.
bool pointee(Dwarf_Die* typed, Dwarf_Die* out) {
    Dwarf_Attribute attr;
    Dwarf_Die type;
    if (!dwarf_attr_integrate(typed, DW_AT_type, &attr) || !dwarf_formref_die(&attr, &type) || !resolveType(&type)) return false;
    if (dwarf_tag(&type) != DW_TAG_pointer_type) return false;
    if (!dwarf_attr_integrate(&type, DW_AT_type, &attr) || !dwarf_formref_die(&attr, out)) {
        *out = Dwarf_Die{};  // void*
        return true;
    }
    resolveType(out);
    return true;
}

class Evaluator {
public:
    Evaluator(const FrameContext& frame, Dwarf_Die subprogram, bool allowEntryValues)
        : f_(frame), subprogram_(subprogram), entryValues_(allowEntryValues) {}

    // The value of a variable at `location` (its DW_AT_location attribute): 8 bytes.
    std::optional<uint64_t> value(Dwarf_Attribute* location) {
        Dwarf_Op* expr = nullptr;
        size_t len = 0;
        if (dwarf_getlocation_addr(location, f_.pc, &expr, &len, 1) <= 0 || len == 0) return std::nullopt;
        return run(location, expr, len, true);
    }

    // An expression that computes a value (DW_AT_call_value, DW_AT_frame_base).
    std::optional<uint64_t> computed(Dwarf_Attribute* attr) {
        Dwarf_Op* expr = nullptr;
        size_t len = 0;
        if (dwarf_getlocation(attr, &expr, &len) != 0 || len == 0) return std::nullopt;
        return run(attr, expr, len, false);
    }

private:
    // isLocation: the expression gives a place (a register, or an address to read) unless it ends
    // in DW_OP_stack_value; else it gives the value itself.
    std::optional<uint64_t> run(Dwarf_Attribute* attr, Dwarf_Op* ops, size_t n, bool isLocation) {
        std::vector<uint64_t> st;
        bool inRegister = false, stackValue = false;
        auto push = [&](std::optional<uint64_t> v) {
            if (!v || st.size() >= kMaxStack) return false;
            st.push_back(*v);
            return true;
        };
        for (size_t i = 0; i < n; ++i) {
            const Dwarf_Op& op = ops[i];
            uint8_t a = op.atom;
            if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
                if (!push(reg(f_.registers, a - DW_OP_reg0))) return std::nullopt;
                inRegister = true;
            } else if (a == DW_OP_regx) {
                if (!push(reg(f_.registers, op.number))) return std::nullopt;
                inRegister = true;
            } else if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
                auto r = reg(f_.registers, a - DW_OP_breg0);
                if (!r || !push(*r + static_cast<int64_t>(op.number))) return std::nullopt;
            } else if (a == DW_OP_bregx) {
                auto r = reg(f_.registers, op.number);
                if (!r || !push(*r + static_cast<int64_t>(op.number2))) return std::nullopt;
            } else if (a == DW_OP_fbreg) {
                auto base = frameBase();
                if (!base || !push(*base + static_cast<int64_t>(op.number))) return std::nullopt;
            } else if (a == DW_OP_call_frame_cfa) {
                if (!push(f_.cfa)) return std::nullopt;
            } else if (a == DW_OP_addr) {
                if (!push(op.number + f_.dwarfBias)) return std::nullopt;
            } else if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
                push(uint64_t(a - DW_OP_lit0));
            } else if (a == DW_OP_const1u || a == DW_OP_const2u || a == DW_OP_const4u || a == DW_OP_const8u ||
                       a == DW_OP_constu || a == DW_OP_const1s || a == DW_OP_const2s || a == DW_OP_const4s ||
                       a == DW_OP_const8s || a == DW_OP_consts) {
                push(uint64_t(op.number));
            } else if (a == DW_OP_plus_uconst) {
                if (st.empty()) return std::nullopt;
                st.back() += op.number;
            } else if (a == DW_OP_plus || a == DW_OP_minus || a == DW_OP_and || a == DW_OP_or) {
                if (st.size() < 2) return std::nullopt;
                uint64_t b = st.back();
                st.pop_back();
                uint64_t& x = st.back();
                x = a == DW_OP_plus ? x + b : a == DW_OP_minus ? x - b : a == DW_OP_and ? (x & b) : (x | b);
            } else if (a == DW_OP_deref || a == DW_OP_deref_size) {
                if (st.empty()) return std::nullopt;
                uint64_t v = 0;
                size_t size = a == DW_OP_deref ? 8 : std::min<size_t>(op.number, 8);
                if (!f_.memory->readExact(st.back(), &v, size)) return std::nullopt;
                st.back() = v;
            } else if (a == DW_OP_stack_value) {
                stackValue = true;
            } else if (a == DW_OP_entry_value || a == DW_OP_GNU_entry_value) {
                if (!push(entryValue(attr, &op))) return std::nullopt;
            } else if (a == DW_OP_piece) {
                if (i == 0 || op.number < 8) return std::nullopt;  // only a whole first piece
                break;
            } else if (a == DW_OP_implicit_value) {
                Dwarf_Block block;
                if (dwarf_getlocation_implicit_value(attr, &op, &block) != 0 || block.length < 8) return std::nullopt;
                uint64_t v;
                std::memcpy(&v, block.data, 8);
                return v;
            } else if (a == DW_OP_nop) {
            } else {
                return std::nullopt;  // an operation a pointer's location does not need
            }
        }
        if (st.empty()) return std::nullopt;
        if (!isLocation || inRegister || stackValue) return st.back();
        return f_.memory->readValue<uint64_t>(st.back());
    }

    std::optional<uint64_t> frameBase() {
        Dwarf_Attribute attr;
        if (!dwarf_attr(&subprogram_, DW_AT_frame_base, &attr)) return std::nullopt;
        Evaluator inner(f_, subprogram_, false);
        return inner.computed(&attr);
    }

    // The value a register had when this function was entered: the caller passed it at its call
    // site (DW_TAG_call_site_parameter with that register as location, DW_AT_call_value).
    std::optional<uint64_t> entryValue(Dwarf_Attribute* attr, const Dwarf_Op* op) {
        if (!entryValues_ || !f_.haveCaller) return std::nullopt;
        Dwarf_Attribute blockAttr;
        Dwarf_Op* inner = nullptr;
        size_t len = 0;
        if (dwarf_getlocation_attr(attr, op, &blockAttr) != 0 || dwarf_getlocation(&blockAttr, &inner, &len) != 0 || len != 1)
            return std::nullopt;
        uint64_t wanted;
        if (inner[0].atom >= DW_OP_reg0 && inner[0].atom <= DW_OP_reg31) wanted = inner[0].atom - DW_OP_reg0;
        else if (inner[0].atom == DW_OP_regx) wanted = inner[0].number;
        else return std::nullopt;
        Dwarf_Die site;
        Dwarf_Die callerScope = f_.callerSubprogram;
        if (!findCallSite(&callerScope, f_.callerReturnAddress - f_.callerDwarfBias, &site)) return std::nullopt;
        Dwarf_Die param;
        if (dwarf_child(&site, &param) != 0) return std::nullopt;
        do {
            int tag = dwarf_tag(&param);
            if (tag != DW_TAG_call_site_parameter && tag != DW_TAG_GNU_call_site_parameter) continue;
            Dwarf_Attribute loc, value;
            Dwarf_Op* where = nullptr;
            size_t whereLen = 0;
            if (!dwarf_attr(&param, DW_AT_location, &loc) || dwarf_getlocation(&loc, &where, &whereLen) != 0 || whereLen != 1) continue;
            uint64_t r = where[0].atom == DW_OP_regx ? where[0].number : uint64_t(where[0].atom - DW_OP_reg0);
            if (!((where[0].atom >= DW_OP_reg0 && where[0].atom <= DW_OP_reg31) || where[0].atom == DW_OP_regx) || r != wanted) continue;
            if (!dwarf_attr(&param, DW_AT_call_value, &value) && !dwarf_attr(&param, DW_AT_GNU_call_site_value, &value)) return std::nullopt;
            // Evaluated in the caller's frame, at the call.
            FrameContext caller;
            caller.arch = f_.arch;
            caller.memory = f_.memory;
            caller.registers = f_.callerRegisters;
            caller.cfa = f_.callerCfa;
            caller.dwarfBias = f_.callerDwarfBias;
            caller.pc = f_.callerReturnAddress - 1 - f_.callerDwarfBias;
            Evaluator inCaller(caller, f_.callerSubprogram, false);
            return inCaller.computed(&value);
        } while (dwarf_siblingof(&param, &param) == 0);
        return std::nullopt;
    }

    const FrameContext& f_;
    Dwarf_Die subprogram_;
    bool entryValues_;
};

std::string dieName(Dwarf_Die* die) {
    Dwarf_Attribute attr;
    const char* name = dwarf_attr_integrate(die, DW_AT_name, &attr) ? dwarf_formstring(&attr) : nullptr;
    return name ? name : "";
}

// For a pointer to a structure: its members of type PyThreadState* (struct _ts), by offset.
std::vector<std::pair<std::string, uint64_t>> threadStateMembers(Dwarf_Die* structure) {
    std::vector<std::pair<std::string, uint64_t>> out;
    int tag = dwarf_tag(structure);
    if (tag != DW_TAG_structure_type && tag != DW_TAG_class_type) return out;
    if (dieName(structure) == "_ts") return out;  // a thread state's own prev/next are not what it was handed
    Dwarf_Die member;
    if (dwarf_child(structure, &member) != 0) return out;
    do {
        if (dwarf_tag(&member) != DW_TAG_member || dwarf_hasattr(&member, DW_AT_declaration)) continue;
        Dwarf_Die target;
        if (!pointee(&member, &target) || dwarf_tag(&target) != DW_TAG_structure_type || dieName(&target) != "_ts") continue;
        Dwarf_Attribute attr;
        Dwarf_Word offset = 0;
        if (!dwarf_attr(&member, DW_AT_data_member_location, &attr) || dwarf_formudata(&attr, &offset) != 0) continue;
        out.emplace_back(dieName(&member), offset);
    } while (dwarf_siblingof(&member, &member) == 0);
    return out;
}

bool isCallSite(int tag) { return tag == DW_TAG_call_site || tag == DW_TAG_GNU_call_site; }

// Calls `visit` on every call site below `scope`, through blocks and inlined calls, until it returns true.
template <typename Visit>
bool forEachCallSite(Dwarf_Die* scope, Visit visit, int* budget) {
    Dwarf_Die child;
    if (dwarf_child(scope, &child) != 0) return false;
    do {
        if (--*budget < 0) return false;
        int tag = dwarf_tag(&child);
        if (isCallSite(tag)) {
            if (visit(&child)) return true;
        } else if (tag == DW_TAG_lexical_block || tag == DW_TAG_inlined_subroutine) {
            if (forEachCallSite(&child, visit, budget)) return true;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return false;
}

}  // namespace

std::optional<Dwarf_Addr> callSiteReturnPc(Dwarf_Die* site) {
    Dwarf_Attribute attr;
    Dwarf_Addr at = 0;
    if ((dwarf_attr(site, DW_AT_call_return_pc, &attr) && dwarf_formaddr(&attr, &at) == 0) ||
        (dwarf_attr(site, DW_AT_low_pc, &attr) && dwarf_formaddr(&attr, &at) == 0))
        return at;
    return std::nullopt;
}

bool findCallSite(Dwarf_Die* scope, Dwarf_Addr returnPc, Dwarf_Die* out) {
    int budget = kMaxCallSiteSearch;
    return forEachCallSite(scope, [&](Dwarf_Die* site) {
        if (callSiteReturnPc(site) != returnPc) return false;
        *out = *site;
        return true;
    }, &budget);
}

bool callSiteOrigin(Dwarf_Die* site, Dwarf_Die* out) {
    Dwarf_Attribute attr;
    return (dwarf_attr(site, DW_AT_call_origin, &attr) || dwarf_attr(site, DW_AT_abstract_origin, &attr)) &&
           dwarf_formref_die(&attr, out);
}

std::vector<Dwarf_Die> tailCallSites(Dwarf_Die* scope) {
    std::vector<Dwarf_Die> out;
    int budget = kMaxCallSiteSearch;
    forEachCallSite(scope, [&](Dwarf_Die* site) {
        if (dwarf_hasattr(site, DW_AT_call_tail_call) || dwarf_hasattr(site, DW_AT_GNU_tail_call)) out.push_back(*site);
        return false;
    }, &budget);
    return out;
}

void parameterValues(const FrameContext& frame, Dwarf_Die scope, Dwarf_Die subprogram, std::vector<FrameValue>* out) {
    Dwarf_Die child;
    if (dwarf_child(&scope, &child) != 0) return;
    do {
        if (dwarf_tag(&child) != DW_TAG_formal_parameter) continue;
        Dwarf_Die target;
        if (!pointee(&child, &target)) continue;  // pointers only
        Dwarf_Attribute location;
        if (!dwarf_attr(&child, DW_AT_location, &location)) continue;  // optimized out
        Evaluator evaluator(frame, subprogram, true);
        auto value = evaluator.value(&location);
        if (!value) continue;
        std::string name = dieName(&child);
        out->push_back({FrameValue::Kind::Parameter, name, *value});
        if (!*value) continue;
        for (const auto& [member, offset] : threadStateMembers(&target))
            if (auto v = frame.memory->readValue<uint64_t>(*value + offset))
                out->push_back({FrameValue::Kind::Parameter, std::string(name).append("->").append(member), *v});
    } while (dwarf_siblingof(&child, &child) == 0);
}

}  // namespace pytstates
