#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The blocks the documentation prints, and the markers that say how each is checked.

A marker is the line right before a block: in Markdown an HTML comment
before the opening fence, in a man page a roff comment before .EX:

    <!-- example: examples/edge/stapled.json -->     .\\" example: PATH
    <!-- example-part: PATH -->                      .\\" example-part: PATH
    <!-- check: KIND -->                             .\\" check: KIND
    <!-- not-checked: why -->
    <!-- airgap-routine: SIDE -->

example: the block is the file PATH (relative to the source tree), byte
for byte. example-part: the block is a run of the file's lines, the run
and the block each shifted left by their common indentation (a fragment
that cannot stand alone, checked inside a whole file). check: the block
is a whole file of KIND, written out for the test to give to its tool
(stapled, stapled-cmdline, nginx, vcl, prometheus-rules,
prometheus-config, json, toml). not-checked: a configuration block of a
kind the suite does not check, and why. airgap-routine: a step of the
air-gap routine, run by t_airgap_doc on SIDE (air-gapped, connected).

A fenced block in a configuration language (json, nginx, vcl, yaml, toml,
ini) and a man page example that starts with "{" must carry a marker.

  doc_blocks.py check SRCDIR OUTDIR   check the markers; write the check:
                                      blocks to OUTDIR and list them in
                                      OUTDIR/tasks (KIND, FILE, ORIGIN)
  doc_blocks.py routine FILE          print the airgap-routine blocks of
                                      FILE, each after a line "#@ SIDE LINE"
"""
import glob
import os
import re
import sys

CONFIG_LANGS = {"json", "nginx", "vcl", "yaml", "toml", "ini"}
CHECK_KINDS = {"stapled": "json", "stapled-cmdline": "sh", "nginx": "conf",
               "vcl": "vcl", "prometheus-rules": "yml",
               "prometheus-config": "yml", "json": "json", "toml": "toml"}
SIDES = {"air-gapped", "connected"}
MD_MARKER = re.compile(r"^<!-- ([a-z-]+): (.+?) -->$")
ROFF_MARKER = re.compile(r'^\.\\" ([a-z-]+): (.+)$')
ROFF_ESCAPES = [("\\-", "-"), ("\\(dq", '"'), ("\\(aq", "'"), ("\\e", "\\"),
                ("\\&", ""), ("\\(em", "\u2014"), ("\\~", " ")]


class Block:
    def __init__(self, doc, line, lang, marker, text):
        self.doc, self.line, self.lang = doc, line, lang
        self.marker, self.text = marker, text

    def where(self):
        return "%s:%d" % (self.doc, self.line)


def md_blocks(path, rel):
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and lines[j] != "```":
            j += 1
        mk = MD_MARKER.match(lines[start - 1]) if start > 0 else None
        text = "\n".join(lines[start + 1:j]) + "\n"
        out.append(Block(rel, start + 1, lang,
                         (mk.group(1), mk.group(2)) if mk else None, text))
        i = j + 1
    return out


def roff_text(lines):
    text = "\n".join(lines) + "\n"
    for esc, ch in ROFF_ESCAPES:
        text = text.replace(esc, ch)
    return text


def roff_blocks(path, rel):
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i] != ".EX":
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j] != ".EE":
            j += 1
        mk = ROFF_MARKER.match(lines[start - 1]) if start > 0 else None
        body = lines[start + 1:j]
        lang = "json" if body and body[0].lstrip().startswith("{") else ""
        out.append(Block(rel, start + 1, lang,
                         (mk.group(1), mk.group(2)) if mk else None,
                         roff_text(body)))
        i = j + 1
    return out


def doc_files(src):
    names = ["README.md"] + sorted(
        os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*"))
        if re.search(r"\.(md|[1-9])$", p))
    return [n for n in names if os.path.isfile(os.path.join(src, n))]


def blocks_of(src, rel):
    path = os.path.join(src, rel)
    return md_blocks(path, rel) if rel.endswith(".md") else roff_blocks(path, rel)


def dedent(lines):
    ind = min((len(l) - len(l.lstrip(" ")) for l in lines if l.strip()),
              default=0)
    return [l[ind:] for l in lines]


def is_part(block_text, file_text):
    want = dedent(block_text.rstrip("\n").split("\n"))
    have = file_text.rstrip("\n").split("\n")
    n = len(want)
    return any(dedent(have[i:i + n]) == want for i in range(len(have) - n + 1))


def first_difference(a, b):
    al, bl = a.split("\n"), b.split("\n")
    for k in range(max(len(al), len(bl))):
        x = al[k] if k < len(al) else "(end)"
        y = bl[k] if k < len(bl) else "(end)"
        if x != y:
            return "line %d: printed %r, file %r" % (k + 1, x, y)
    return "identical"


def check(src, outdir):
    fails, tasks, counts = [], [], {}
    for rel in doc_files(src):
        for b in blocks_of(src, rel):
            kind, arg = b.marker if b.marker else (None, None)
            counts[kind] = counts.get(kind, 0) + 1
            if kind in ("example", "example-part"):
                path = os.path.join(src, arg)
                if not os.path.isfile(path):
                    fails.append("%s: %s names %s, which does not exist" %
                                 (b.where(), kind, arg))
                    continue
                ftext = open(path, encoding="utf-8").read()
                if kind == "example" and b.text != ftext:
                    fails.append("%s: the block is not %s (%s)" % (
                        b.where(), arg, first_difference(b.text, ftext)))
                elif kind == "example-part" and not is_part(b.text, ftext):
                    fails.append("%s: the block is not a run of lines of %s" %
                                 (b.where(), arg))
            elif kind == "check":
                if arg not in CHECK_KINDS:
                    fails.append("%s: unknown check kind %r" % (b.where(), arg))
                    continue
                name = "%s-%d.%s" % (re.sub(r"[^A-Za-z0-9]", "_", rel),
                                     b.line, CHECK_KINDS[arg])
                with open(os.path.join(outdir, name), "w", encoding="utf-8") as f:
                    f.write(b.text)
                tasks.append("%s\t%s\t%s" % (arg, name, b.where()))
            elif kind == "airgap-routine":
                if arg not in SIDES:
                    fails.append("%s: unknown side %r" % (b.where(), arg))
            elif kind == "not-checked":
                pass
            elif kind is not None:
                fails.append("%s: unknown marker %r" % (b.where(), kind))
            elif b.lang in CONFIG_LANGS:
                fails.append("%s: a %s block without a marker saying how it "
                             "is checked" % (b.where(), b.lang))
    with open(os.path.join(outdir, "tasks"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in tasks))
    for k in sorted(counts, key=str):
        print("# blocks marked %s: %d" % (k or "(none)", counts[k]))
    for m in fails:
        print("FAIL - " + m)
    return 1 if fails else 0


def routine(path):
    for b in md_blocks(path, os.path.basename(path)):
        if b.marker and b.marker[0] == "airgap-routine":
            sys.stdout.write("#@ %s %d\n%s" % (b.marker[1], b.line, b.text))
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "check":
        return check(argv[2], argv[3])
    if len(argv) == 3 and argv[1] == "routine":
        return routine(argv[2])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
