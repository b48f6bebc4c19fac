#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The README stays a five-minute read and the docs stay whole: README.md has at most 260 lines;
every finding code of commands/analysis/finding_codes.cpp is in the README's findings table with its
severity and has its own section in docs/findings.md (and neither tells a code that does not
exist); every relative link of README.md and docs/*.md names a file that exists and, where it
names an anchor in a Markdown file, a heading of that file (GitHub's slugs)."""
import pathlib
import re
import sys

SOURCE = pathlib.Path(__file__).resolve().parents[2]
MAX_README_LINES = 260

failures = []


def fail(message):
    failures.append(message)


def finding_codes():
    text = (SOURCE / "commands/analysis/finding_codes.cpp").read_text()
    codes = dict(re.findall(r'\{C::\w+, "([a-z0-9-]+)", S::(Error|Warning|Info)\b', text))
    if len(codes) < 10:  # the table holds 16 today: a parse that finds few is a broken parse
        sys.exit(f"commands/analysis/finding_codes.cpp: only {len(codes)} codes parsed; has its table's shape changed?")
    return {name: severity.lower() for name, severity in codes.items()}


def outside_code_blocks(text):
    """The lines of a Markdown text that are not inside ``` fences."""
    kept, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(line)
    return kept


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    seen, result = {}, set()
    for line in outside_code_blocks(path.read_text()):
        m = re.match(r"#{1,6} (.*)", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return result


def check_links(path):
    count = 0
    for line in outside_code_blocks(path.read_text()):
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            count += 1
            file_part, _, anchor = target.partition("#")
            where = (path.parent / file_part).resolve() if file_part else path
            shown = f"{path.relative_to(SOURCE)}: ({target})"
            if not where.exists():
                fail(f"{shown} names {where.relative_to(SOURCE) if where.is_relative_to(SOURCE) else where}, which does not exist")
            elif anchor and where.suffix == ".md" and anchor not in anchors(where):
                fail(f"{shown}: {where.name} has no heading whose anchor is #{anchor}")
    return count


codes = finding_codes()

readme = SOURCE / "README.md"
readme_lines = readme.read_text().count("\n")
if readme_lines > MAX_README_LINES:
    fail(f"README.md has {readme_lines} lines, more than {MAX_README_LINES}: move the detail to docs/")

# "| `stale-tstate` | error | ..." rows, in the README and in no code block.
rows = {}
for line in outside_code_blocks(readme.read_text()):
    m = re.match(r"\| `([a-z0-9-]+)` \| (error|warning|info) \|", line)
    if m:
        rows[m.group(1)] = m.group(2)
for name, severity in codes.items():
    if name not in rows:
        fail(f"README.md's findings table lacks {name}")
    elif rows[name] != severity:
        fail(f"README.md's findings table gives {name} as {rows[name]}, the code says {severity}")
for name in rows.keys() - codes.keys():
    fail(f"README.md's findings table tells {name}, which commands/analysis/finding_codes.cpp does not have")

findings_md = SOURCE / "docs/findings.md"
sections = {}
for line in outside_code_blocks(findings_md.read_text()):
    m = re.match(r"## ([a-z0-9-]+) \((error|warning|info)\)$", line)
    if m:
        sections[m.group(1)] = m.group(2)
for name, severity in codes.items():
    if name not in sections:
        fail(f"docs/findings.md has no section '## {name} ({severity})'")
    elif sections[name] != severity:
        fail(f"docs/findings.md gives {name} as {sections[name]}, the code says {severity}")
for name in sections.keys() - codes.keys():
    fail(f"docs/findings.md tells {name}, which commands/analysis/finding_codes.cpp does not have")

docs = sorted((SOURCE / "docs").glob("*.md"))
links = sum(check_links(path) for path in [readme] + docs)

print(f"README.md: {readme_lines} lines (at most {MAX_README_LINES}); {len(codes)} finding codes, "
      f"{len(rows)} in the README's table, {len(sections)} sections in docs/findings.md; "
      f"{links} relative links in README.md and {len(docs)} docs/*.md files")
for message in failures:
    print("FAIL:", message)
sys.exit(1 if failures else 0)
