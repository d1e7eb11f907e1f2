#!/usr/bin/env python3
"""Split a dated benchmark diary (Markdown) into JSON lines, one per entry.

An entry starts at each `##`/`###` heading outside code fences, and at each
paragraph that opens with a bold title naming a date (YYYY-MM-DD) or a
session, unless that paragraph directly follows its heading. Each line is

    {"area": ..., "date": "YYYY-MM-DD" | null, "commit": "..." | null,
     "title": "...", "text": "<the entry's Markdown, verbatim>"}

in the diary's order; the texts joined together give the diary back, except
that absolute paths of the machine it was written on become placeholders
(see `placeholders`). `area` is the `##` section the entry sits in; `date`
is the first date in the entry's title, else the first in its text;
`commit` is a commit the title or the text names as the build measured
(`commit X`, `build of X`, ...) or, failing that, one its first paragraph
names so, else null. A `##` heading with no text of its own goes with the
entry after it.

    python3 bench/split_history.py OLD_BENCHMARKS.md bench/results/history.jsonl
"""
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


def placeholders(text: str) -> str:
    """Absolute paths of the machine -> <venv>, <corpus>, <work>, <home>."""
    text = re.sub(r"/work/peers-venv\b", "<venv>", text)
    text = re.sub(r"/work/(?:main|wt-peers)\b", "<work>", text)
    text = re.sub(r"/work/", "<work>/", text)
    text = re.sub(r"/tmp/oxq(?![\w-])", "<corpus>", text)
    text = re.sub(r"/tmp/", "<work>/", text)
    text = re.sub(r"/root/", "<home>/", text)
    return text


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
    if len(argv) != 3:
        sys.exit(__doc__)
    src, dst = argv[1], argv[2]
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
                "title": placeholders(e["title"]),
                "text": placeholders(text),
            }
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"{len(entries)} entries -> {dst}")


if __name__ == "__main__":
    main(sys.argv)
