"""The trafilatura peer of bench/peers/peers.py: the HTTP-only pipeline a
user with static pages would pick instead of a browser.

Each page: a GET over a keep-alive `urllib3.PoolManager` (one per worker),
the body decoded as trafilatura decodes it, then
`trafilatura.extract(output_format="markdown", include_links=True,
include_formatting=True, include_tables=True, url=...)`: the main content
as Markdown with its links, emphasis and tables, as oxwright's Markdown
has them. Two ways to run N at once:

- `processes` (the default): N worker processes, each with its own
  connection pool, pages handed out one at a time;
- `threads`: N threads in one process (lxml releases the GIL while it
  parses, trafilatura's own Python does not).

    python trafilatura_run.py <urls.tsv: id<TAB>url> <out dir> [N [processes|threads]]

Writes <out>/<id>.md per converted page; stderr has `FAIL <id> <message>`
per failure (an empty extraction is a failure, as for every peer).
"""

import concurrent.futures
import multiprocessing
import sys
from pathlib import Path

import trafilatura
import urllib3
from trafilatura.utils import decode_file

_POOL = None


def _pool() -> urllib3.PoolManager:
    global _POOL
    if _POOL is None:
        _POOL = urllib3.PoolManager(num_pools=4, maxsize=8, retries=False, timeout=60.0)
    return _POOL


def convert(job: tuple) -> tuple:
    """(id, url, out dir) -> (id, None) or (id, why it failed)."""
    ident, url, out = job
    try:
        resp = _pool().request("GET", url, preload_content=True)
        if resp.status != 200:
            return ident, f"HTTP {resp.status}"
        text = decode_file(resp.data)
        md = trafilatura.extract(text, url=url, output_format="markdown", include_links=True,
                                 include_formatting=True, include_tables=True)
        if not md or not md.strip():
            return ident, "no main content extracted"
        (Path(out) / f"{ident}.md").write_text(md)
        return ident, None
    except Exception as err:  # noqa: BLE001 - every failure is a page's, reported
        return ident, f"{type(err).__name__}: {err}"


def main() -> int:
    urls, out = Path(sys.argv[1]), Path(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    how = sys.argv[4] if len(sys.argv) > 4 else "processes"
    if how not in ("processes", "threads"):
        sys.exit(f"expected processes or threads, got {how!r}")
    out.mkdir(parents=True, exist_ok=True)
    jobs = []
    for line in urls.read_text().splitlines():
        if line.strip():
            ident, url = line.split("\t", 1)
            jobs.append((ident, url.strip(), str(out)))
    if how == "processes":
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(n) as pool:
            results = list(pool.imap_unordered(convert, jobs, chunksize=1))
    else:
        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            results = list(pool.map(convert, jobs))
    failed = 0
    for ident, why in results:
        if why is not None:
            failed += 1
            print(f"FAIL {ident} {why}", file=sys.stderr)
    print(f"{len(results) - failed} converted, {failed} failed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
