#!/usr/bin/env python3
"""Checks the links of README.md and the book (docs/src/**/*.md).

Every markdown link target outside code (inline `[text](target)`, images,
reference definitions `[name]: target` and autolinks `<scheme:...>`) must be
a relative path inside the repository that exists (for a page of the
book, inside the book: the built book holds docs/src only); a `#anchor` on a
markdown file (or alone, for the same file) must name one of its headings,
slugged as GitHub and mdBook slug them (lowercase, spaces to hyphens,
punctuation other than `-` and `_` dropped, `-1`, `-2` … for repeats). A
target with a scheme (`http:`, `https:`, `mailto:` …) or an absolute path
fails: the manual links nowhere outside the repository. URLs written as
text, in code spans or in code blocks are not links and are not checked.

Usage: check_links.py [REPO_ROOT]. Exits 1 naming each broken link.
"""

import re
import sys
import unicodedata
from pathlib import Path

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
INDENTED_CODE = re.compile(r"^(?: {4}|\t)")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
INLINE_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>]*>|[^\s)]*(?:\([^\s)]*\)[^\s)]*)*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*(<[^>]*>|\S+)")
AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def slug(text):
    """GitHub's and mdBook's heading id for the heading text `text`."""
    text = CODE_SPAN.sub(lambda m: m.group(2), text)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    out = []
    for ch in text.lower():
        if ch in "-_" or ch.isalnum():
            out.append(ch)
        elif ch == " ":
            out.append("-")
        elif unicodedata.category(ch).startswith("M"):
            out.append(ch)
    return "".join(out)


def prose_lines(text):
    """(line number, line) of the lines outside fenced and indented code."""
    fence = None
    prev_blank = True
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            prev_blank = False
            continue
        if m:
            fence = m.group(1)
            continue
        if prev_blank and INDENTED_CODE.match(line) and line.strip():
            continue  # an indented code block (kept simple: after a blank line)
        prev_blank = not line.strip()
        yield n, line


def anchors(path, cache={}):
    if path not in cache:
        seen, ids = {}, set()
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            k = seen.get(base, 0)
            seen[base] = k + 1
            ids.add(base if k == 0 else f"{base}-{k}")
        cache[path] = ids
    return cache[path]


def links(path):
    """(line number, target) of every link in the file."""
    for n, line in prose_lines(path.read_text(encoding="utf-8")):
        m = REF_DEF.match(line)
        if m:
            yield n, m.group(2)
            continue
        bare = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        for m in INLINE_LINK.finditer(bare):
            yield n, m.group(2)
        for m in AUTOLINK.finditer(bare):
            yield n, m.group(1)


def check(root):
    files = [root / "README.md"] + sorted((root / "docs" / "src").rglob("*.md"))
    broken = []
    for f in files:
        rel = f.relative_to(root)
        for n, target in links(f):
            where = f"{rel}:{n}: ({target})"
            target = target.strip("<>")
            if not target:
                broken.append(f"{where}: empty link target")
                continue
            if SCHEME.match(target):
                broken.append(f"{where}: links outside the repository")
                continue
            if target.startswith("/"):
                broken.append(f"{where}: absolute path; write it relative to {rel}")
                continue
            path_part, _, anchor = target.partition("#")
            path_part = path_part.split("?")[0]
            dest = (f.parent / path_part).resolve() if path_part else f
            try:
                dest.relative_to(root)
            except ValueError:
                broken.append(f"{where}: points outside the repository")
                continue
            book = (root / "docs" / "src").resolve()
            if f.is_relative_to(book) and not dest.is_relative_to(book):
                # The built book holds only docs/src: such a link is dead there.
                broken.append(f"{where}: leaves the book; include the file or link a page of the book")
                continue
            if not dest.exists():
                broken.append(f"{where}: no such file {dest.relative_to(root)}")
                continue
            if anchor and dest.suffix == ".md" and dest.is_file():
                if anchor not in anchors(dest):
                    broken.append(
                        f"{where}: no heading #{anchor} in {dest.relative_to(root)}"
                    )
    return files, broken


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent.parent)
    files, broken = check(root.resolve())
    for b in broken:
        print(f"broken link: {b}", file=sys.stderr)
    count = sum(1 for f in files for _ in links(f))
    print(f"check_links: {len(files)} files, {count} links, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
