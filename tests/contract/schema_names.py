#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docs/report.schema.json against the code that writes the JSON: the schema is a valid draft
2020-12 schema, and every key commands/render/render*.cpp writes (w.field, w.key, fieldOrNull,
addressOrNull, stringOrNull) is a property the schema names, so a field added without its schema
fails here even before a test's report shows it (each report is validated where a test reads it:
tests/lib/json_contract.py)."""
import glob
import json
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..")
sys.path.insert(0, os.path.join(here, "..", "lib"))
import json_contract  # noqa: E402

json_contract._load()  # raises on a schema that is not valid draft 2020-12
with open(json_contract.SCHEMA) as f:
    schema = json.load(f)

named = set()


def walk(node):
    if isinstance(node, dict):
        named.update(node.get("properties", {}).keys())
        for v in node.values():
            walk(v)
    elif isinstance(node, list):
        for v in node:
            walk(v)


walk(schema)
written = {}
pattern = re.compile(r'\b(?:w\.field|w\.key|w\.fieldOrNull|addressOrNull\(w,|stringOrNull\(w,)\s*\(?\s*"([a-z_]+)"')
for path in sorted(glob.glob(os.path.join(root, "commands", "render", "render*.cpp"))):
    with open(path) as f:
        for n, line in enumerate(f, 1):
            for key in pattern.findall(line):
                written.setdefault(key, "%s:%d" % (os.path.relpath(path, root), n))
missing = {k: where for k, where in written.items() if k not in named}
if len(written) < 100:
    sys.exit("only %d keys found in commands/render/render*.cpp: the pattern no longer matches the writer" % len(written))
if missing:
    sys.exit("written but not in docs/report.schema.json: " + ", ".join("%s (%s)" % kv for kv in sorted(missing.items())))
print("docs/report.schema.json names all %d keys commands/render/render*.cpp writes (%d properties)" % (len(written), len(named)))
