# SPDX-License-Identifier: Apache-2.0
"""The contract kept in the repository: docs/report.schema.json (JSON Schema draft 2020-12) names
every field of every --json report. Each report a test reads goes through loads()/check(): a field
the schema does not name, a missing required one or a wrong type fails the test where it is read.
The count of documents checked is printed when the test ends."""
import atexit
import json
import os
import sys

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")
SCHEMA = os.path.join(DOCS, "report.schema.json")
ERROR_SCHEMA = os.path.join(DOCS, "error.schema.json")  # what --json prints instead when it cannot analyse
_validators = {}
checked = 0


def _load(path=SCHEMA):
    if path not in _validators:
        import jsonschema  # python3-jsonschema (scripts/lib/suite.sh)
        with open(path) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        _validators[path] = jsonschema.Draft202012Validator(schema)
    return _validators[path]


def check(doc, where=""):
    """doc, once it is valid against the schema (an {"error": ...} object: against
    docs/error.schema.json); AssertionError naming the first faults otherwise."""
    global checked
    schema = ERROR_SCHEMA if isinstance(doc, dict) and "error" in doc else SCHEMA
    errors = sorted(_load(schema).iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    # Of a branching rule (anyOf: an object or null), the branch's own fault, not the whole value.
    errors = [min(e.context, key=lambda c: -len(c.absolute_path)) if e.context else e for e in errors]
    if errors:
        said = "; ".join("%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(top)", e.message[:160]) for e in errors[:3])
        raise AssertionError("--json output%s breaks docs/%s (%d faults): %s" % (
            " of " + where if where else "", os.path.basename(schema), len(errors), said))
    checked += 1
    return doc


def loads(text, where=""):
    return check(json.loads(text), where)


@atexit.register
def _said():
    if checked:
        print("json schema: %d --json reports valid against docs/report.schema.json" % checked, file=sys.stderr)
