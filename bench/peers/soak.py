#!/usr/bin/env python3
"""Memory over a long batch: does oxwright grow over 10,000 real pages?

Serves the quality corpus on loopback (the server of `peers.py`), cycles
its pages to N distinct URLs (`?r=K` makes each visit a new URL; the
server ignores the query) and runs one `oxwright batch` over them with the
defaults plus `--block image,font,media`. Every 2 s it samples the
`oxwright` process's RSS, the PSS of the Chromium processes under it and
the pages done (lines of the batch manifest), and reads from the batch's
log the admission limit and the pages in flight. It prints and appends to
--results one JSON line: RSS and Chromium PSS medians over a window after
warm-up (pages 500–1,500) and over the last 1,000 pages, and the growth
between them.

    python3 bench/peers/soak.py --corpus CORPUS --pages 10000 --results bench/results/soak.jsonl

CORPUS is the output directory of `bench/quality/prepare.py` (or set
OXWRIGHT_BENCH_CORPUS); --oxwright names the binary (default
target/release/oxwright), --work the scratch directory.

The browser is replaced every `recycle_after` jobs (500 by default), so
Chromium's own growth is bounded by design; the number to watch is the
oxwright process's RSS.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import peers  # noqa: E402
from chromium_pss import comm  # noqa: E402


def status_kib(pid: int, key: str = "VmRSS") -> int:
    """A `/proc/<pid>/status` size in KiB: `VmRSS`, or its parts `RssAnon`
    (heap and stacks) and `RssFile` (the binary's pages read so far)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kib(pid: int) -> int:
    return status_kib(pid)


def done(store: Path) -> int:
    """Pages run so far: manifest lines, less the `cancelled` lines an
    interrupted batch writes for the jobs it never ran."""
    n = 0
    for m in store.glob("batches/*/manifest.jsonl"):
        try:
            n += sum(1 for line in m.read_bytes().splitlines() if b'"kind":"cancelled"' not in line)
        except OSError:
            pass
    return n


def threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


class AdmissionLog:
    """Reads the `admission sample` lines the batch appends to its log:
    each `read` gives the mean pages in flight and the last limit since the
    previous one, or nothing when no line came (logging off)."""

    def __init__(self, path: Path):
        self.path, self.pos, self.rest = path, 0, b""

    def read(self) -> dict:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                chunk = f.read()
        except OSError:
            return {}
        self.pos += len(chunk)
        lines = (self.rest + chunk).split(b"\n")
        self.rest = lines.pop()
        in_use, limit = [], None
        for line in lines:
            if b"admission sample" not in line:
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            in_use.append(ev.get("in_use", 0))
            limit = ev.get("limit", limit)
        if not in_use:
            return {}
        return {"in_use": round(sum(in_use) / len(in_use), 2), "limit": limit}


def window(samples, lo, hi, key):
    xs = [s[key] for s in samples if lo <= s["pages"] < hi and key in s]
    return round(statistics.median(xs), 1) if xs else None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default=os.environ.get("OXWRIGHT_BENCH_CORPUS"),
                   required="OXWRIGHT_BENCH_CORPUS" not in os.environ,
                   help="output dir of bench/quality/prepare.py (default: $OXWRIGHT_BENCH_CORPUS)")
    p.add_argument("--pages", type=int, default=10000)
    p.add_argument("--oxwright", default="target/release/oxwright")
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "oxwright-soak"),
                   help="scratch dir, emptied first (default: oxwright-soak under the system temp dir)")
    p.add_argument("--results", default=None, help="JSON lines file to append to")
    a = p.parse_args()

    corpus = Path(a.corpus)
    server = peers.Server(corpus / "pages")
    pages = peers.pick_pages(corpus, 1 << 20)
    out = Path(a.work)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    urls = [f"http://127.0.0.1:{server.port}/{pages[i % len(pages)]['id']}.html?r={i}" for i in range(a.pages)]
    (out / "urls.txt").write_text("".join(u + "\n" for u in urls))
    store = out / "store"
    cmd = [a.oxwright, "batch", "--allow-host", f"127.0.0.1:{server.port}", "--block", "image,font,media",
           "--out", str(store), "--json", str(out / "urls.txt")]

    samples = []
    stop = threading.Event()
    t0 = time.monotonic()
    # The pool's admission controller logs its limit and the pages in flight
    # every 500 ms at `trace`: the heap holds what the pages in flight hold,
    # so growth is read beside them.
    env = dict(os.environ)
    # (telemetry's DEFAULT_FILTER, `lib/telemetry/src/init.rs`, plus the pool at `trace`)
    env.setdefault("RUST_LOG", "warn,oxwright=info,chromiumoxide=error,oxwright_browser::pool=trace")
    admission = AdmissionLog(out / "log.txt")

    def sample(pid):
        while not stop.is_set():
            chromium = [x for x in peers.descendants(pid) if "chrom" in comm(x)]
            s = {"t": round(time.monotonic() - t0, 1), "pages": done(store),
                 "rss_mib": rss_kib(pid) / 1024, "anon_mib": status_kib(pid, "RssAnon") / 1024,
                 "file_mib": status_kib(pid, "RssFile") / 1024, "chromium_pss_mib": peers.pss_kib(chromium) / 1024,
                 "chromium_processes": len(chromium), "threads": threads(pid)}
            s.update(admission.read())
            samples.append(s)
            # Written as taken: a run that dies late keeps its samples.
            with open(out / "samples.jsonl", "a") as f:
                f.write(json.dumps(s) + "\n")
            stop.wait(2.0)

    with open(out / "log.txt", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        th = threading.Thread(target=sample, args=(proc.pid,), daemon=True)
        th.start()
        rc = proc.wait()
    wall = time.monotonic() - t0
    stop.set()
    th.join()
    peers.reap_all(None)

    n = done(store)
    ok = sum(1 for m in store.glob("batches/*/manifest.jsonl")
             for line in m.read_text().splitlines() if json.loads(line).get("status") == "ok")
    if n < a.pages:
        print(f"only {n} of {a.pages} pages ran (interrupted)", file=sys.stderr)
    early = (500, 1500)
    late = (max(n - 1000, early[1]), n + 1)
    rss_early, rss_late = window(samples, *early, "rss_mib"), window(samples, *late, "rss_mib")
    res = {
        "rc": rc, "pages": a.pages, "done": n, "ok": ok, "wall_s": round(wall), "pages_per_s": round(n / wall, 2),
        "rss_mib_pages_500_1500": rss_early, f"rss_mib_pages_{late[0]}_{n}": rss_late,
        "rss_growth_pct": round(100 * (rss_late - rss_early) / rss_early, 1) if rss_early and rss_late else None,
        "rss_mib_peak": round(max(s["rss_mib"] for s in samples), 1),
        "chromium_pss_mib_pages_500_1500": window(samples, *early, "chromium_pss_mib"),
        f"chromium_pss_mib_pages_{late[0]}_{n}": window(samples, *late, "chromium_pss_mib"),
        # RSS median per 1,000 pages: the shape of any growth.
        "rss_mib_per_1000_pages": [window(samples, k, k + 1000, "rss_mib") for k in range(0, n, 1000)],
        # Its parts: the heap (anonymous) and the binary's pages (file).
        "anon_mib_per_1000_pages": [window(samples, k, k + 1000, "anon_mib") for k in range(0, n, 1000)],
        "file_mib_per_1000_pages": [window(samples, k, k + 1000, "file_mib") for k in range(0, n, 1000)],
        # The URLs cycle the corpus in order, so two 1,000-page windows
        # hold different pages; medians per pass over the corpus compare
        # like with like (the first pass includes the warm-up).
        "cycle_pages": len(pages),
        "rss_mib_per_cycle": [window(samples, k, k + len(pages), "rss_mib") for k in range(0, n, len(pages))],
        "anon_mib_per_cycle": [window(samples, k, k + len(pages), "anon_mib") for k in range(0, n, len(pages))],
        "threads_max": max(s["threads"] for s in samples),
        # Pages in flight (mean over each 2 s sample) and the admission
        # limit, per 1,000 pages, to read the heap beside.
        "in_use_per_1000_pages": [window(samples, k, k + 1000, "in_use") for k in range(0, n, 1000)],
        "limit_per_1000_pages": [window(samples, k, k + 1000, "limit") for k in range(0, n, 1000)],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        # "oxwright 0.1.0 (<commit>)": the build the figures are of.
        "version": subprocess.run([a.oxwright, "--version"], capture_output=True, text=True).stdout.strip(),
    }
    peers.emit(res, a.results)


if __name__ == "__main__":
    main()
