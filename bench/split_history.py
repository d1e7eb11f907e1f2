#!/usr/bin/env python3
"""Split a dated benchmark diary (Markdown) into JSON lines, one per entry.

An entry starts at each `##`/`###` heading outside code fences, and at each
paragraph that opens with a bold title naming a date (YYYY-MM-DD) or a
session, unless that paragraph directly follows its heading. Each line is

    {"area": ..., "date": "YYYY-MM-DD" | null, "commit": "..." | null,
     "title": "...", "text": "<the entry's Markdown, verbatim>"}

in the diary's order; the texts joined together give the diary back, except
that the absolute path prefixes given with --map (paths of the machine it
was written on) become placeholders. `area` is the `##` section the entry sits in; `date`
is the first date in the entry's title, else the first in its text;
`commit` is a commit the title or the text names as the build measured
(`commit X`, `build of X`, ...) or, failing that, one its first paragraph
names so, else null. A `##` heading with no text of its own goes with the
entry after it.

    python3 bench/split_history.py DIARY.md bench/results/history.jsonl \\
        --map VENV=<venv> --map CHECKOUT=<work> --map CORPUS=<corpus> ...

`--rewrite FILE...` applies the same --map to other text files in place
(e.g. result JSON that recorded the machine's paths) instead of splitting.
"""
import argparse
import json
import re
import sys

# `## N.` section number -> area name.
AREAS = {
    "1": "fetch throughput",
    "2": "conversion CPU",
    "3": "memory",
    "4": "token reduction",
    "5": "sitemap parsing",
    "6": "distributed mode",
    "7": "workflow per-step overhead",
    "8": "main-content quality",
    "9": "MCP vs @playwright/mcp",
    "10": "peers",
    "11": "replay",
    "12": "Lambda",
    "13": "chaos",
}

DATE = re.compile(r"\b(20\d\d-\d\d-\d\d)\b")
HEX = r"`?([0-9a-f]{7,40})`?\b"
COMMIT = re.compile(
    r"(?:\bcommit|\bbuilds?\s+of|\bsoak\s+of|\bbinary\s+of)\s+" + HEX
)
BOLD_START = re.compile(r"^\*\*(.+?)\*\*", re.S)


def placeholders(text: str, mapping) -> str:
    """Replace each path PREFIX of `mapping` ((prefix, placeholder) pairs, in
    order) where it stands as a whole path or the start of one."""
    for prefix, repl in mapping:
        text = re.sub(r"(?<![\w./-])" + re.escape(prefix) + r"(?![\w.-])", repl, text)
    return text


def parse_map(items):
    out = []
    for item in items:
        prefix, sep, repl = item.partition("=")
        if not sep or not prefix.startswith("/"):
            sys.exit(f"--map wants /ABSOLUTE/PREFIX=PLACEHOLDER, not {item!r}")
        out.append((prefix.rstrip("/"), repl))
    return out


def is_hash(s: str) -> bool:
    return bool(re.search(r"\d", s)) and bool(re.search(r"[a-f]", s))


def first_paragraph(text: str) -> str:
    """The entry's first paragraph that is not a heading."""
    paras = [p for p in re.split(r"\n\s*\n", text) if p.strip() and not p.lstrip().startswith("#")]
    return paras[0] if paras else ""


def find_commit(title: str, text: str):
    """The commit the title names, else one the first paragraph names as the build."""
    for m in COMMIT.finditer(title):
        if is_hash(m.group(1)):
            return m.group(1)
    for m in re.finditer(r"(?:\(|\bbuild )" + HEX, title):
        if is_hash(m.group(1)):
            return m.group(1)
    for m in COMMIT.finditer(first_paragraph(text)):
        if is_hash(m.group(1)):
            return m.group(1)
    return None


def split(lines):
    """Yield (kind, title, area, [lines]) for each entry."""
    entries = []
    cur = {"title": "Benchmarks", "area": "general", "lines": [], "body": False}
    area = "general"
    fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fence = not fence
        start = None
        if not fence and re.match(r"^#{1,3} ", line) and not line.startswith("# "):
            title = re.sub(r"^#+\s+", "", line).strip()
            m = re.match(r"^## (\d+)\.", line)
            if m:
                area = AREAS[m.group(1)]
            start = (title, area, False)
        elif (not fence and line.startswith("**") and i > 0 and lines[i - 1].strip() == ""
              and cur["body"]):
            para = "".join(lines[i:i + 4])
            m = BOLD_START.match(para)
            if m and (DATE.search(m.group(1)) or re.search(r"[Ss]ession", m.group(1))):
                start = (" ".join(m.group(1).split()).rstrip(".:"), area, False)
        if start and cur["lines"] and cur["body"]:
            entries.append(cur)
        if start:
            # a `##` heading with no text of its own opens the entry after it
            carry = [] if cur["body"] else cur["lines"]
            cur = {"title": start[0], "area": start[1], "lines": carry, "body": False}
        cur["lines"].append(line)
        if not start and line.strip():
            cur["body"] = True
        i += 1
    entries.append(cur)
    return entries


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", metavar="PATH",
                    help="DIARY OUT, or with --rewrite the files to rewrite in place")
    ap.add_argument("--rewrite", action="store_true", help="only apply --map to PATH... in place")
    ap.add_argument("--map", action="append", default=[], metavar="/PREFIX=PLACEHOLDER",
                    help="replace an absolute path prefix of the machine (repeatable, applied in order)")
    a = ap.parse_args(argv[1:])
    mapping = parse_map(a.map)
    if a.rewrite:
        for path in a.paths:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            new = placeholders(text, mapping)
            if new != text:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
                print(f"rewrote {path}")
        return
    if len(a.paths) != 2:
        ap.error("want DIARY OUT")
    src, dst = a.paths
    with open(src, encoding="utf-8") as f:
        lines = f.readlines()
    entries = split(lines)
    joined = "".join("".join(e["lines"]) for e in entries)
    assert joined == "".join(lines), "the split must give the diary back"
    with open(dst, "w", encoding="utf-8") as out:
        for e in entries:
            text = "".join(e["lines"])
            d = DATE.search(e["title"]) or DATE.search(text)
            rec = {
                "area": e["area"],
                "date": d.group(1) if d else None,
                "commit": find_commit(e["title"], text),
                "title": placeholders(e["title"], mapping),
                "text": placeholders(text, mapping),
            }
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"{len(entries)} entries -> {dst}")


if __name__ == "__main__":
    main(sys.argv)
