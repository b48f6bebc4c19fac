# SPDX-License-Identifier: Apache-2.0
"""Run inside gdb on a core of tests/scenarios/bindings/run.py: reads, for every binding module, the
record its own holder static points to and that record's fields, through the module's DWARF types
(each module has its own `pybind11::detail::internals`, so types are looked up in its blocks).

Input (environment PYTSTATES_GDB_INPUT, JSON): {module path: {"holder": link address of the holder
static, "anchor": link address of a function gdb knows by name, "anchor_name": that name, "kind":
"pybind11-2" | "pybind11-3" | "nanobind"}}. The link addresses come from the module's .symtab (nm);
gdb gives the function's load address, which sets the module's load bias.
Prints one line: GDB-RECORDS {module path: {"record", "key", "istate"}}."""
import json
import os

import gdb


def objfile_of(path):
    for o in gdb.objfiles():
        if os.path.realpath(o.filename) == path:
            return o
    raise gdb.GdbError("gdb has no objfile " + path)


def key_of(tstate_field):
    """internals::tstate: Py_tss_t* (internals v4), Py_tss_t (v5+), or pybind11 3.x's
    thread_specific_storage whose member key_ is the Py_tss_t."""
    v = tstate_field
    if v.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
        v = v.dereference()
    names = [f.name for f in v.type.strip_typedefs().fields()]
    if "key_" in names:
        v = v["key_"]
    return int(v["_key"])


def read(path, spec):
    o = objfile_of(path)
    anchor = o.lookup_global_symbol(spec["anchor_name"]) or o.lookup_static_symbol(spec["anchor_name"])
    if anchor is None:
        raise gdb.GdbError("%s: gdb finds no %s" % (path, spec["anchor_name"]))
    load = int(anchor.value().address)
    holder = spec["holder"] + load - spec["anchor"]
    block = gdb.block_for_pc(load)
    if spec["kind"] == "nanobind":
        nb = o.lookup_static_symbol("nanobind::detail::internals") or o.lookup_global_symbol("nanobind::detail::internals")
        return {"record": int(nb.value())}
    internals = gdb.lookup_type("pybind11::detail::internals", block)
    if spec["kind"] == "pybind11-2":
        # get_internals_pp()::internals_pp: internals**
        pp = gdb.Value(holder).cast(internals.pointer().pointer().pointer()).dereference()
    else:
        manager = gdb.lookup_type("pybind11::detail::internals_pp_manager<pybind11::detail::internals>", block)
        m = gdb.Value(holder).cast(manager.pointer()).dereference()
        # internals_singleton_pp_: std::unique_ptr<internals>*, whose first word is the internals*
        pp = m["internals_singleton_pp_"].cast(internals.pointer().pointer())
    record = pp.dereference()
    fields = record.dereference()
    return {"record": int(record), "key": key_of(fields["tstate"]), "istate": int(fields["istate"])}


def main():
    spec = json.loads(os.environ["PYTSTATES_GDB_INPUT"])
    out = {}
    for path, s in spec.items():
        try:
            out[path] = read(path, s)
        except gdb.error as e:
            out[path] = {"error": str(e)}
    print("GDB-RECORDS " + json.dumps(out))


main()
