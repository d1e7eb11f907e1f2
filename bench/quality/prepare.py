#!/usr/bin/env python3
"""Builds the main-content dev corpus from two public test sets.

Reads the pages and their ground truth straight from git mirrors (bare or
not) of adbar/trafilatura (Apache-2.0: tests/evaldata.json with "with" /
"without" snippets, HTML in tests/cache/ and tests/eval/) and
mozilla/readability (Apache-2.0: test/test-pages/*/source.html and
expected.html), and writes, under OUT:

  pages/<id>.html    the page's bytes as published (served as-is on loopback)
  truth.jsonl        one line per page: id, corpus, source, with, without
                     (trafilatura) or text (readability: expected.html's text)

Nothing third-party is committed to oxwright; rerun this to rebuild OUT.
Standard library only.

  python3 bench/quality/prepare.py --trafilatura <mirror of adbar/trafilatura> \\
      --readability <mirror of mozilla/readability> --out <corpus dir>
"""

import argparse
import hashlib
import html.parser
import json
import os
import subprocess


def git(repo, *args):
    return subprocess.run(["git", "--git-dir", gitdir(repo), *args], check=True, capture_output=True).stdout


def gitdir(repo):
    dotgit = os.path.join(repo, ".git")
    return dotgit if os.path.isdir(dotgit) else repo


def show(repo, path):
    return git(repo, "show", f"HEAD:{path}")


def listing(repo, path):
    # -z: names with non-ASCII letters come unquoted
    out = git(repo, "ls-tree", "-r", "-z", "--name-only", "HEAD", path).decode()
    return [name for name in out.split("\0") if name]


class TextOf(html.parser.HTMLParser):
    """Collects the text of an HTML fragment, one block per line."""

    BLOCKS = {"p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "tr", "br", "blockquote", "td", "th"}
    SKIP = {"script", "style", "noscript", "template"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)

    def text(self):
        return " ".join("".join(self.parts).split())


def trafilatura(repo, pages, out, limit):
    evaldata = json.loads(show(repo, "tests/evaldata.json"))
    where = {}
    for sub in ("tests/cache", "tests/eval"):  # trafilatura's own lookup order
        for path in listing(repo, sub):
            where.setdefault(os.path.basename(path), path)
    n = 0
    for url in sorted(evaldata):
        item = evaldata[url]
        path = where.get(item["file"])
        if path is None:
            continue
        if limit == "cache" and not path.startswith("tests/cache/"):
            continue
        pid = "t-" + hashlib.sha1(url.encode()).hexdigest()[:12]
        with open(os.path.join(pages, pid + ".html"), "wb") as f:
            f.write(show(repo, path))
        line = {"id": pid, "corpus": "trafilatura", "source": url, "with": item["with"], "without": item["without"]}
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
        n += 1
    return n


def readability(repo, pages, out):
    dirs = sorted({p.split("/")[2] for p in listing(repo, "test/test-pages")})
    n = 0
    for d in dirs:
        try:
            source = show(repo, f"test/test-pages/{d}/source.html")
            expected = show(repo, f"test/test-pages/{d}/expected.html").decode("utf-8", "replace")
        except subprocess.CalledProcessError:
            continue
        parser = TextOf()
        parser.feed(expected)
        text = parser.text()
        if not text:
            continue
        pid = "r-" + d
        with open(os.path.join(pages, pid + ".html"), "wb") as f:
            f.write(source)
        out.write(json.dumps({"id": pid, "corpus": "readability", "source": d, "text": text}, ensure_ascii=False) + "\n")
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trafilatura", help="mirror of adbar/trafilatura")
    ap.add_argument("--trafilatura-set", choices=["cache", "all"], default="all",
                    help="only pages in tests/cache (~110) or all of evaldata.json (~990)")
    ap.add_argument("--readability", help="mirror of mozilla/readability")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    pages = os.path.join(a.out, "pages")
    os.makedirs(pages, exist_ok=True)
    with open(os.path.join(a.out, "truth.jsonl"), "w", encoding="utf-8") as out:
        if a.trafilatura:
            print("trafilatura pages:", trafilatura(a.trafilatura, pages, out, a.trafilatura_set))
        if a.readability:
            print("readability pages:", readability(a.readability, pages, out))


if __name__ == "__main__":
    main()
