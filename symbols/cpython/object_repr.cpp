// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/object_repr.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "symbols/cpython/python_objects.h"
#include "symbols/text/hex_address.h"
#include "symbols/text/utf8.h"

namespace pytstates {

namespace {
constexpr uint64_t kTpflagsHeaptype = 1u << 9;
constexpr int kMaxBases = 64;
constexpr int kDigitBits = 30;             // PYLONG_BITS_IN_DIGIT on LP64 builds
constexpr int64_t kMaxIntDigits = 2048;    // 30-bit digits converted (about 18,500 decimal digits)
// PyTypeObject: tp_repr is 8 pointers after tp_name (tp_basicsize, tp_itemsize, tp_dealloc,
// tp_vectorcall_offset, tp_getattr, tp_setattr, tp_as_async), tp_dict right after tp_base, and
// PyHeapTypeObject.ht_qualname two pointers after ht_name (ht_slots between): 3.8 - 3.15.
constexpr int64_t kTypeReprFromName = 64;
constexpr int64_t kTypeDictFromBase = 8;
constexpr int64_t kQualnameFromHtName = 16;

// One character of unicode_repr's output (Objects/unicodeobject.c), the quote already chosen.
void appendReprChar(std::string& out, char32_t ch, char32_t quote) {
    char hex[16];
    if (ch == quote || ch == '\\') {
        out += '\\';
        out += static_cast<char>(ch);
    } else if (ch == '\t') {
        out += "\\t";
    } else if (ch == '\n') {
        out += "\\n";
    } else if (ch == '\r') {
        out += "\\r";
    } else if (ch < ' ' || ch == 0x7f) {
        std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(ch));
        out += hex;
    } else if (ch < 0x7f) {
        out += static_cast<char>(ch);
    } else if (pythonIsPrintable(ch)) {
        appendUtf8(out, ch);
    } else {
        if (ch <= 0xff) std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(ch));
        else if (ch <= 0xffff) std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned>(ch));
        else std::snprintf(hex, sizeof hex, "\\U%08x", static_cast<unsigned>(ch));
        out += hex;
    }
}

char32_t quoteFor(const std::u32string& text) {
    bool single = text.find(U'\'') != std::u32string::npos, dbl = text.find(U'"') != std::u32string::npos;
    return single && !dbl ? U'"' : U'\'';
}

// The magnitude's decimal digits (long_to_decimal_string's base-10**9 conversion).
std::string decimalOf(const std::vector<uint32_t>& digits) {
    constexpr uint32_t kBase = 1000000000;
    std::vector<uint32_t> out;  // base 10**9, least significant first
    for (size_t i = digits.size(); i-- > 0;) {
        uint64_t carry = digits[i];
        for (auto& d : out) {
            uint64_t z = (uint64_t(d) << kDigitBits) + carry;
            d = static_cast<uint32_t>(z % kBase);
            carry = z / kBase;
        }
        while (carry) {
            out.push_back(static_cast<uint32_t>(carry % kBase));
            carry /= kBase;
        }
    }
    if (out.empty()) return "0";
    std::string text = std::to_string(out.back());
    char chunk[16];
    for (size_t i = out.size() - 1; i-- > 0;) {
        std::snprintf(chunk, sizeof chunk, "%09u", out[i]);
        text += chunk;
    }
    return text;
}

const char* cycleMarker(ReprReader::Kind kind) {
    switch (kind) {
        case ReprReader::Kind::List: return "[...]";
        case ReprReader::Kind::Tuple: return "(...)";
        default: return "{...}";
    }
}
}  // namespace

std::string pythonUnicodeRepr(const std::u32string& codePoints) {
    char32_t quote = quoteFor(codePoints);
    std::string out(1, static_cast<char>(quote));
    for (char32_t ch : codePoints) appendReprChar(out, ch, quote);
    out += static_cast<char>(quote);
    return out;
}

// One repr being written: the text within its budget, what was cut, the containers entered.
class ReprWriter {
public:
    ReprWriter(const ReprReader& reader, const ReprLimits& limits) : r_(reader), o_(reader.objects_), limits_(limits) {}

    ObjectRepr run(uint64_t object) {
        ObjectRepr result;
        const auto* info = infoOf(object);
        result.readable = info != nullptr;
        if (info) {
            result.type = info->name;
            result.builtin = info->kind != ReprReader::Kind::Other;
        }
        write(object, 0);
        if (full_) {
            // Cut to the budget with room for "...", on a UTF-8 character's first byte.
            size_t keep = limits_.maxBytes > 3 ? limits_.maxBytes - 3 : 0;
            if (out_.size() > keep) {
                out_.resize(keep);
                while (!out_.empty() && (static_cast<unsigned char>(out_.back()) & 0xc0) == 0x80) out_.pop_back();
                if (!out_.empty() && static_cast<unsigned char>(out_.back()) >= 0xc0) out_.pop_back();
            }
            out_ += "...";
        }
        result.text = out_;
        result.truncated = truncated_ || full_;
        result.exact = exact_ && !result.truncated && result.readable;
        return result;
    }

private:
    const ReprReader::TypeInfo* infoOf(uint64_t object) const {
        auto type = o_.type(object);
        if (!type) return nullptr;
        const auto& info = r_.typeInfo(*type);
        return info.kind == ReprReader::Kind::Unreadable ? nullptr : &info;
    }

    // Appends what fits the budget; false once it is spent (the caller stops).
    bool put(const std::string& text) {
        if (full_) return false;
        if (out_.size() + text.size() > limits_.maxBytes) {
            out_.append(text, 0, limits_.maxBytes - out_.size());
            full_ = true;
            return false;
        }
        out_ += text;
        return true;
    }
    size_t room() const { return full_ ? 0 : limits_.maxBytes - out_.size(); }

    void unreadable(uint64_t object, const char* what = "object") {
        exact_ = false;
        put(std::string("<unreadable ") + what + " at " + hexAddress(object) + ">");
    }

    void write(uint64_t object, int depth) {
        if (full_) return;
        const auto* info = infoOf(object);
        if (!info) return unreadable(object);
        using Kind = ReprReader::Kind;
        switch (info->kind) {
            case Kind::None: put("None"); return;
            case Kind::Bool: return writeBool(object);
            case Kind::Int: return writeInt(object);
            case Kind::Float: {
                auto v = o_.memory().readValue<double>(object + o_.layout().floatValue);
                if (!v) return unreadable(object, "float");
                put(pythonFloatRepr(*v));
                return;
            }
            case Kind::Str: return writeStr(object);
            case Kind::Bytes: return writeBytes(object);
            case Kind::Default: put(info->defaultRepr + hexAddress(object) + ">"); return;
            case Kind::Function: {  // func_repr: "<function %U at %p>" with its __qualname__
                auto name = functionQualname(object);
                if (!name) return unreadable(object, "function");
                put("<function " + *name + " at " + hexAddress(object) + ">");
                return;
            }
            case Kind::Module: return writeModule(object, depth);
            case Kind::CFunction: return writeCFunction(object);
            case Kind::MethodWrapper: return writeMethodWrapper(object);
            case Kind::Method: return writeMethod(object, depth);
            case Kind::Type: {  // a class: type_repr
                auto name = r_.dottedName(object);
                if (!name) return unreadable(object, "class");
                put("<class '" + *name + "'>");
                return;
            }
            case Kind::List:
            case Kind::Tuple:
            case Kind::Dict:
            case Kind::Set:
            case Kind::FrozenSet: return writeContainer(object, *info, depth);
            default:
                exact_ = false;
                put("<" + info->name + " object at " + hexAddress(object) + ">");
                return;
        }
    }

    int64_t fieldsAt() const { return o_.layout().objectFields(); }

    // PyFunctionObject.func_qualname: the 12th pointer after the header up to 3.9, the 4th of
    // _Py_COMMON_FIELDS from 3.10 (3.15 too).
    std::optional<std::string> functionQualname(uint64_t function) const {
        auto q = o_.memory().readPointer(function + fieldsAt() + (o_.layout().minor <= 9 ? 88 : 24));
        return q && *q ? o_.str(*q, 256) : std::nullopt;
    }

    // A C string of the binary's (ml_name, wrapperbase.name) as %s prints it; refused when it is
    // not a short printable ASCII name.
    std::optional<std::string> cName(std::optional<uint64_t> pointer) const {
        if (!pointer || !*pointer) return std::nullopt;
        auto name = o_.memory().readCString(*pointer, 128);
        if (!name || name->empty()) return std::nullopt;
        for (char c : *name)
            if (c < 0x20 || c > 0x7e) return std::nullopt;
        return name;
    }

    // "<TYPE object at 0x...>" of a C function's or method-wrapper's self (tp_name, %p).
    std::optional<std::string> ofSelf(uint64_t self) const {
        const auto* info = infoOf(self);
        if (!info) return std::nullopt;
        return " of " + info->name + " object at " + hexAddress(self) + ">";
    }

    void writeCFunction(uint64_t object) {  // meth_repr (Objects/methodobject.c), 3.8 - 3.15
        // PyCFunctionObject: m_ml, m_self after the header; PyMethodDef.ml_name first.
        auto ml = o_.memory().readPointer(object + fieldsAt());
        auto self = o_.memory().readPointer(object + fieldsAt() + 8);
        auto name = ml && *ml ? cName(o_.memory().readPointer(*ml)) : std::nullopt;
        if (!name || !self) return unreadable(object, "builtin_function_or_method");
        if (!*self || o_.isInstance(*self, "module")) {
            put("<built-in function " + *name + ">");
            return;
        }
        auto of = ofSelf(*self);
        if (!of) return unreadable(object, "builtin_function_or_method");
        put("<built-in method " + *name + *of);
    }

    void writeMethodWrapper(uint64_t object) {  // wrapper_repr (Objects/descrobject.c)
        // wrapperobject: descr, self; PyWrapperDescrObject: d_type, d_name, d_qualname, then
        // d_base (struct wrapperbase, name first).
        auto descr = o_.memory().readPointer(object + fieldsAt());
        auto self = o_.memory().readPointer(object + fieldsAt() + 8);
        auto base = descr && *descr ? o_.memory().readPointer(*descr + fieldsAt() + 24) : std::nullopt;
        auto name = base && *base ? cName(o_.memory().readPointer(*base)) : std::nullopt;
        auto of = name && self && *self ? ofSelf(*self) : std::nullopt;
        if (!of) return unreadable(object, "method-wrapper");
        put("<method-wrapper '" + *name + "'" + *of);
    }

    void writeMethod(uint64_t object, int depth) {  // method_repr (Objects/classobject.c)
        // PyMethodObject: im_func, im_self. The name is the function's __qualname__: read for a
        // Python function; any other callable's would need its own getattr.
        auto func = o_.memory().readPointer(object + fieldsAt());
        auto self = o_.memory().readPointer(object + fieldsAt() + 8);
        if (!func || !*func || !self || !*self) return unreadable(object, "method");
        const auto* funcInfo = infoOf(*func);
        auto name = funcInfo && funcInfo->kind == ReprReader::Kind::Function ? functionQualname(*func) : std::nullopt;
        if (!name || depth >= limits_.maxDepth) {
            exact_ = false;
            if (depth >= limits_.maxDepth) truncated_ = true;
            put("<method object at " + hexAddress(object) + ">");
            return;
        }
        put("<bound method " + *name + " of ");
        write(*self, depth + 1);
        put(">");
    }

    // str(x) of a str, as format's {} puts it: its text unquoted. A non-printable character is
    // escaped as repr escapes it (the repr's text stays free of control bytes), and not exact.
    void writeStrUnquoted(uint64_t object, int depth) {
        size_t length = 0;
        const auto* info = infoOf(object);
        auto text = info && info->kind == ReprReader::Kind::Str
                        ? readPyUnicodeCodePoints(o_.memory(), o_.layout(), object, room() + 1, &length)
                        : std::nullopt;
        if (!text) {
            exact_ = false;
            return write(object, depth + 1);
        }
        if (text->size() < length) truncated_ = true;
        std::string out;
        for (char32_t ch : *text) {
            if (ch >= 0x20 && ch != 0x7f && (ch < 0x7f || pythonIsPrintable(ch))) {
                appendUtf8(out, ch);
            } else {
                exact_ = false;
                appendReprChar(out, ch, U'\'');  // never a quote: those are printable
            }
        }
        put(out);
    }

    // A loader's dotted class name ("_frozen_importlib.BuiltinImporter" for the class itself,
    // "_frozen_importlib_external.SourceFileLoader" for an instance).
    std::optional<std::string> loaderClass(uint64_t loader) const {
        const auto* info = infoOf(loader);
        if (!info) return std::nullopt;
        if (info->kind == ReprReader::Kind::Type) return r_.dottedName(loader);
        auto type = o_.type(loader);
        return type ? r_.dottedName(*type) : std::nullopt;
    }

    // importlib's loaders that define module_repr (3.8 - 3.11, deprecated): `(built-in)`,
    // `(frozen)`, `(namespace)` after repr(module.__name__). False when the loader has none (or
    // module.__name__ is missing: module_repr's exception is passed over); a loader of the
    // program's own might define one, which only running it could print (not exact).
    bool writeLoaderModuleRepr(std::optional<uint64_t> loader, std::optional<uint64_t> name, int depth) {
        if (!loader) return false;
        auto cls = loaderClass(*loader);
        static const std::map<std::string, const char*> kSaid = {
            {"_frozen_importlib.BuiltinImporter", "built-in"},
            {"_frozen_importlib.FrozenImporter", "frozen"},
            {"_frozen_importlib_external._NamespaceLoader", "namespace"},
            {"_frozen_importlib_external.NamespaceLoader", "namespace"},
            {"_frozen_importlib_external.SourceFileLoader", nullptr},
            {"_frozen_importlib_external.SourcelessFileLoader", nullptr},
            {"_frozen_importlib_external.ExtensionFileLoader", nullptr},
        };
        auto found = cls ? kSaid.find(*cls) : kSaid.end();
        if (found == kSaid.end()) exact_ = false;
        if (found == kSaid.end() || !found->second || !name) return false;
        put("<module ");
        write(*name, depth + 1);
        put(std::string(" (") + found->second + ")>");
        return true;
    }

    // module_repr: importlib._bootstrap._module_repr, from the module's __dict__ (what
    // getattr(module, ...) finds: ModuleType has no attribute of these names).
    void writeModule(uint64_t object, int depth) {
        auto dict = o_.moduleDict(object);
        if (!dict) return unreadable(object, "module");
        if (depth >= limits_.maxDepth) {  // a module inside its own name, loader or spec: a bounded answer
            exact_ = false;
            truncated_ = true;
            put("<module object at " + hexAddress(object) + ">");
            return;
        }
        auto entry = [&](const char* key) -> std::optional<uint64_t> {
            auto v = o_.dictValue(*dict, key);
            if (v && o_.isNone(*v)) return std::nullopt;  // getattr(..., None) and `spec is not None`
            return v;
        };
        auto loader = entry("__loader__"), spec = entry("__spec__");
        auto name = o_.dictValue(*dict, "__name__");
        // 3.8 - 3.10 ask the loader first; 3.11 only when there is no spec; 3.12+ never.
        if ((minor() <= 10 || (minor() == 11 && !spec)) && writeLoaderModuleRepr(loader, name, depth)) return;
        if (spec) return writeModuleFromSpec(object, *spec, depth);
        put("<module ");
        if (name) write(*name, depth + 1);
        else put("'?'");
        if (auto file = o_.dictValue(*dict, "__file__")) {
            put(" from ");
            write(*file, depth + 1);
        } else if (loader) {
            put(" (");
            write(*loader, depth + 1);
            put(")");
        }
        put(">");
    }

    // _module_repr_from_spec, from the ModuleSpec's instance attributes (has_location is
    // _set_fileattr's value).
    void writeModuleFromSpec(uint64_t object, uint64_t spec, int depth) {
        auto name = o_.attribute(spec, "name");
        auto origin = o_.attribute(spec, "origin");
        auto loader = o_.attribute(spec, "loader");
        auto located = o_.attribute(spec, "_set_fileattr");
        auto hasLocation = located ? o_.boolean(*located) : std::nullopt;
        if (!name || !origin || (o_.isNone(*origin) ? !loader : !hasLocation)) {
            exact_ = false;  // not a ModuleSpec as importlib makes them
            put("<module object at " + hexAddress(object) + ">");
            return;
        }
        put("<module ");
        bool noOrigin = o_.isNone(*origin), fromOrigin = !noOrigin && hasLocation.value_or(false);
        if (o_.isNone(*name) && (noOrigin || fromOrigin)) put("'?'");  // else spec.name's own repr
        else write(*name, depth + 1);
        if (noOrigin) {
            if (o_.isNone(*loader)) {
                put(">");
            } else if (minor() >= 12 && loaderClass(*loader) == std::optional<std::string>("_frozen_importlib_external.NamespaceLoader")) {
                // list(loader._path): a _NamespacePath recalculates itself when iterated; its
                // last list is what memory holds (not exact).
                exact_ = false;
                auto path = o_.attribute(*loader, "_path");
                auto paths = path ? o_.attribute(*path, "_path") : std::nullopt;
                put(" (namespace) from ");
                if (paths) write(*paths, depth + 1);
                else unreadable(*loader, "namespace path");
                put(">");
            } else {
                put(" (");
                write(*loader, depth + 1);
                put(")>");
            }
        } else if (fromOrigin) {
            put(" from ");
            write(*origin, depth + 1);
            put(">");
        } else {
            put(" (");
            writeStrUnquoted(*origin, depth);
            put(")>");
        }
    }
    int minor() const { return o_.layout().minor; }

    void writeBool(uint64_t object) {
        auto v = o_.integer(object);
        if (!v) return unreadable(object, "bool");
        put(*v ? "True" : "False");
    }

    void writeInt(uint64_t object) {
        const auto& memory = o_.memory();
        const auto& layout = o_.layout();
        int64_t ndigits = 0;
        bool negative = false;
        if (layout.minor <= 11) {
            auto size = memory.readValue<int64_t>(object + layout.longTag);
            if (!size) return unreadable(object, "int");
            negative = *size < 0;
            ndigits = negative ? -*size : *size;
        } else {
            // lv_tag: digit count << 3 | sign (0 positive, 1 zero, 2 negative)
            auto tag = memory.readValue<uint64_t>(object + layout.longTag);
            if (!tag || (*tag & 3) == 3) return unreadable(object, "int");
            negative = (*tag & 3) == 2;
            ndigits = (*tag & 3) == 1 ? 0 : static_cast<int64_t>(*tag >> 3);
        }
        if (ndigits < 0 || ndigits > kMaxIntDigits) {
            exact_ = false;
            put("<int object at " + hexAddress(object) + ">");
            return;
        }
        std::vector<uint32_t> digits(static_cast<size_t>(ndigits));
        if (ndigits && !memory.readExact(object + layout.longDigits, digits.data(), digits.size() * 4))
            return unreadable(object, "int");
        for (uint32_t d : digits)
            if (d >> kDigitBits) return unreadable(object, "int");
        put((negative ? "-" : "") + decimalOf(digits));
    }

    void writeStr(uint64_t object) {
        size_t length = 0;
        // Every character is at least one byte of repr: more than the room left is never shown.
        auto text = readPyUnicodeCodePoints(o_.memory(), o_.layout(), object, room() + 1, &length);
        if (!text) return unreadable(object, "str");
        if (text->size() < length) truncated_ = true;
        put(pythonUnicodeRepr(*text));
    }

    void writeBytes(uint64_t object) {
        bool cut = false;
        auto raw = o_.bytes(object, room() + 1, &cut);
        if (!raw) return unreadable(object, "bytes");
        if (cut) truncated_ = true;
        put(pythonBytesRepr(*raw));
    }

    void writeContainer(uint64_t object, const ReprReader::TypeInfo& info, int depth) {
        using Kind = ReprReader::Kind;
        bool isSet = info.kind == Kind::Set || info.kind == Kind::FrozenSet;
        // An object inside itself: Python's own marker (Py_ReprEnter), the repr stays exact.
        if (std::find(path_.begin(), path_.end(), object) != path_.end()) {
            put(isSet ? info.name + "(...)" : cycleMarker(info.kind));
            return;
        }
        if (depth >= limits_.maxDepth) {
            truncated_ = true;
            put(isSet ? info.name + "(...)" : cycleMarker(info.kind));
            return;
        }
        path_.push_back(object);
        size_t limit = limits_.maxItems;
        if (info.kind == Kind::Dict) {
            auto entries = o_.dictItems(object, limit + 1);
            if (!entries) {
                path_.pop_back();
                return unreadable(object, "dict");
            }
            put("{");
            for (size_t i = 0; i < entries->size() && !full_; ++i) {
                if (i) put(", ");
                if (i == limit) {
                    truncated_ = true;
                    put("...");
                    break;
                }
                write((*entries)[i].key, depth + 1);
                put(": ");
                write((*entries)[i].value, depth + 1);
            }
            put("}");
        } else {
            std::optional<std::vector<uint64_t>> items;
            size_t total = 0;
            if (info.kind == Kind::List) items = o_.listItems(object, limit, &total);
            else if (info.kind == Kind::Tuple) items = o_.tupleItems(object, limit, &total);
            else if ((items = o_.setItems(object, limit + 1))) total = items->size();
            if (!items) {
                path_.pop_back();
                return unreadable(object, info.kind == Kind::List ? "list" : info.kind == Kind::Tuple ? "tuple" : "set");
            }
            if (items->size() > limit) items->resize(limit);
            if (isSet && items->empty()) {
                put(info.name + "()");
                path_.pop_back();
                return;
            }
            const char* open = info.kind == Kind::List ? "[" : info.kind == Kind::Tuple ? "(" : "{";
            const char* close = info.kind == Kind::List ? "]" : info.kind == Kind::Tuple ? ")" : "}";
            if (isSet && !info.setName.empty()) put(info.setName + "(");
            put(open);
            for (size_t i = 0; i < items->size() && !full_; ++i) {
                if (i) put(", ");
                write((*items)[i], depth + 1);
            }
            if (total > items->size()) {
                truncated_ = true;
                put(", ...");
            }
            if (info.kind == Kind::Tuple && total == 1) put(",");
            put(close);
            if (isSet && !info.setName.empty()) put(")");
        }
        path_.pop_back();
    }

    const ReprReader& r_;
    const ObjectReader& o_;
    ReprLimits limits_;
    std::string out_;
    bool full_ = false, truncated_ = false, exact_ = true;
    std::vector<uint64_t> path_;
};

ReprReader::ReprReader(const ObjectReader& objects, ReprLimits limits) : objects_(objects), limits_(limits) {}

ObjectRepr ReprReader::repr(uint64_t object) const { return repr(object, limits_); }

ObjectRepr ReprReader::repr(uint64_t object, const ReprLimits& limits) const {
    ReprLimits bounded = limits;
    bounded.maxBytes = std::max<size_t>(bounded.maxBytes, 16);
    ReprWriter writer(*this, bounded);
    return writer.run(object);
}

std::optional<std::string> ReprReader::dottedName(uint64_t type) const {
    // object_repr's and type_repr's name: "module.qualname", the module left out when builtins
    // (then tp_name); a static type's tp_name already is "module.name" or a builtin's bare name.
    const Memory& memory = objects_.memory();
    const CPythonLayout& layout = objects_.layout();
    auto p = memory.readPointer(type + layout.typeName);
    if (!p || !*p) return std::nullopt;
    auto name = memory.readCString(*p, 128);
    auto flags = layout.typeFlags == kAbsent ? std::nullopt : memory.readValue<uint64_t>(type + layout.typeFlags);
    if (!name || name->empty() || !flags) return std::nullopt;
    if (!(*flags & kTpflagsHeaptype)) return name;
    if (layout.heapTypeName == kAbsent) return std::nullopt;
    std::optional<std::string> module, qualname;
    if (auto q = memory.readPointer(type + layout.heapTypeName + kQualnameFromHtName); q && *q)
        qualname = readPyUnicode(memory, layout, *q, 256);
    if (auto dict = memory.readPointer(type + layout.typeBase + kTypeDictFromBase); dict && *dict)
        if (auto m = objects_.dictValue(*dict, "__module__")) module = objects_.str(*m, 256);
    if (!qualname) return std::nullopt;
    if (!module || *module == "builtins") return name;
    return *module + "." + *qualname;
}

ReprReader::Kind ReprReader::kind(uint64_t object) const {
    auto type = objects_.type(object);
    if (!type) return Kind::Unreadable;
    return typeInfo(*type).kind;
}

const ReprReader::TypeInfo& ReprReader::typeInfo(uint64_t type) const {
    auto it = types_.find(type);
    if (it != types_.end()) return it->second;
    TypeInfo info = classify(type);
    if (types_.size() >= 4096) types_.clear();
    return types_.emplace(type, std::move(info)).first->second;
}

ReprReader::TypeInfo ReprReader::classify(uint64_t type) const {
    const Memory& memory = objects_.memory();
    const CPythonLayout& layout = objects_.layout();
    TypeInfo info;
    auto readName = [&](uint64_t t) -> std::optional<std::string> {
        auto p = memory.readPointer(t + layout.typeName);
        if (!p || !*p) return std::nullopt;
        return memory.readCString(*p, 128);
    };
    auto name = readName(type);
    auto repr = memory.readPointer(type + layout.typeName + kTypeReprFromName);
    auto flags = layout.typeFlags == kAbsent ? std::nullopt : memory.readValue<uint64_t>(type + layout.typeFlags);
    if (!name || name->empty() || !repr || !flags) return info;  // Unreadable
    info.name = *name;
    info.kind = Kind::Other;
    static const std::map<std::string, Kind> kBuiltins = {
        {"NoneType", Kind::None}, {"bool", Kind::Bool},   {"int", Kind::Int},   {"float", Kind::Float},
        {"str", Kind::Str},       {"bytes", Kind::Bytes}, {"list", Kind::List}, {"tuple", Kind::Tuple},
        {"dict", Kind::Dict},     {"set", Kind::Set},     {"frozenset", Kind::FrozenSet}, {"type", Kind::Type},
        {"function", Kind::Function}, {"module", Kind::Module}, {"builtin_function_or_method", Kind::CFunction},
        {"method-wrapper", Kind::MethodWrapper}, {"method", Kind::Method},
    };
    // The type and its bases: the first static builtin whose tp_repr the type has is the repr
    // CPython runs (a list subclass without __repr__ prints as a list); object's: the default.
    uint64_t t = type;
    for (int depth = 0; t && depth < kMaxBases; ++depth) {
        auto base = memory.readPointer(t + layout.typeBase);
        if (!base) return info;
        auto tFlags = memory.readValue<uint64_t>(t + layout.typeFlags);
        bool heap = !tFlags || (*tFlags & kTpflagsHeaptype);
        auto tRepr = t == type ? repr : memory.readPointer(t + layout.typeName + kTypeReprFromName);
        if (!heap && tRepr && *tRepr == *repr) {
            auto tName = t == type ? name : readName(t);
            if (tName && !*base && *tName == "object") {
                info.kind = Kind::Default;
                break;
            }
            if (tName) {
                auto found = kBuiltins.find(*tName);
                if (found != kBuiltins.end()) {
                    info.kind = found->second;
                    // set_repr names a subclass ("MySet({1})"); frozenset always.
                    if (info.kind == Kind::FrozenSet || (info.kind == Kind::Set && t != type)) info.setName = info.name;
                    break;
                }
            }
        }
        t = *base;
    }
    if (info.kind == Kind::Default) {
        auto shown = dottedName(type);
        if (shown) info.defaultRepr = "<" + *shown + " object at ";
        else info.kind = Kind::Other;
    }
    return info;
}

}  // namespace pytstates
