#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every section a source file or a document cites exists.

A citation is a document of docs/ followed by a quoted section title
(`docs/refresh.md, "Memory"`), a section number of one (`design.md 5.2`),
or a decision file (`docs/decisions/0004-segmented-lru.md`). Comments wrap,
so each file is read with its comment markers and line breaks folded into
single spaces. A title matches a heading whole, with or without the
heading's number ("3. Paths" and "Paths" both match "## 3. Paths").

Usage: doc_cites.py TOP_SRCDIR. Prints "FAIL - FILE: CITATION" for each
citation that names nothing, and exits 1 when there is one.
"""
import os
import re
import sys

ROOMS = ("attest", "cache", "entry", "proxy", "tools", "tests", "systemd",
         "debian", "docs", "examples", "policy")
SUFFIXES = (".c", ".h", ".in", ".sh", ".py", ".md", ".8", ".5", ".json",
            ".yml", ".am", ".ac")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+(.*)$")
CITE_TITLE = re.compile(r'\b((?:docs/)?[a-z0-9_-]+\.md),?\s+"([^"]{1,120})"')
CITE_NUMBER = re.compile(r"\b((?:docs/)?[a-z0-9_-]+\.md)\s+(\d+(?:\.\d+)*)\b")
CITE_DECISION = re.compile(r"\bdocs/decisions/([0-9]{4}-[a-z0-9-]+\.md)")
FOLD = re.compile(r"\s*\n\s*(?:\*(?!/)|#|//|\.\\\"|;)?\s*")


def headings(path):
    """The titles and numbers of a markdown file's headings."""
    titles, numbers = set(), set()
    in_code = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                in_code = not in_code
                continue
            m = None if in_code else HEADING.match(line)
            if m is None:
                continue
            text = m.group(1)
            titles.add(text)
            n = NUMBERED.match(text)
            if n is not None:
                numbers.add(n.group(1))
                titles.add(n.group(2))
    return titles, numbers


def sources(top):
    for room in ROOMS:
        for d, _, files in os.walk(os.path.join(top, room)):
            if "/corpus" in d:
                continue
            for name in files:
                if name.endswith(SUFFIXES):
                    yield os.path.join(d, name)
    for name in ("README.md", "Makefile.am", "configure.ac"):
        yield os.path.join(top, name)


def main(top):
    docs = os.path.join(top, "docs")
    known = {}
    for name in os.listdir(docs):
        if name.endswith(".md"):
            known[name] = headings(os.path.join(docs, name))
    bad = checked = 0
    for path in sources(top):
        try:
            with open(path, encoding="utf-8") as f:
                text = FOLD.sub(" ", f.read())
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        rel = os.path.relpath(path, top)
        for m in CITE_TITLE.finditer(text):
            doc = os.path.basename(m.group(1))
            if doc not in known:
                continue
            checked += 1
            if m.group(2).rstrip(".,") not in known[doc][0]:
                print(f'FAIL - {rel}: {doc}, "{m.group(2)}"')
                bad += 1
        for m in CITE_NUMBER.finditer(text):
            doc = os.path.basename(m.group(1))
            if doc not in known:
                continue
            checked += 1
            if m.group(2) not in known[doc][1]:
                print(f"FAIL - {rel}: {doc} {m.group(2)}")
                bad += 1
        for m in CITE_DECISION.finditer(text):
            checked += 1
            if not os.path.exists(os.path.join(docs, "decisions", m.group(1))):
                print(f"FAIL - {rel}: docs/decisions/{m.group(1)}")
                bad += 1
    print(f"# citations checked: {checked}, naming nothing: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
