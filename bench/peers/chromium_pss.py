#!/usr/bin/env python3
"""Chromium's own PSS while a tool converts the peers corpus, 4 pages in flight.

Runs one tool on the first N pages of the quality corpus (the order of
`peers.py`, served on loopback by the same server) and samples, every
100 ms, the PSS of the Chromium processes among the run's descendants
(`comm` contains "chrom"): the peak, the median over the samples with a
renderer alive, the renderers' share and their count, and the largest
sample's processes by type with the second it was taken at. One JSON line
per run is printed and appended to --results; every sample is written to
`samples.tsv` (seconds, Chromium MiB, renderers MiB, processes, renderers)
in the run's work dir.

    python3 bench/peers/chromium_pss.py --corpus CORPUS --name oxwright --pages 200
    python3 bench/peers/chromium_pss.py --corpus CORPUS --name reuse-1 --config 'context_reuse = 1'
    python3 bench/peers/chromium_pss.py --corpus CORPUS --name playwright --peer playwright

CORPUS is the output directory of `bench/quality/prepare.py` (or set
OXWRIGHT_BENCH_CORPUS); --oxwright names the binary (default
target/release/oxwright).

oxwright runs `batch` with `--pages-per-browser 4 --max-pages-per-browser 4`
(4 in flight, admission fixed; `--default-admission` leaves the admission
at its default) and `--block image,font,media`; --config is
put under `[browser]` in a config file. The Playwright peer is
`node/playwright_run.mjs` with 4 workers (run `npm ci` in node/ first).
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


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def kind(pid: int) -> str:
    """A Chromium process's `--type=` (utility processes by service), or "browser"."""
    args = cmdline(pid).replace("\0", " ").split()
    t = next((x[7:] for x in args if x.startswith("--type=")), "browser")
    if t == "utility":
        t = next((x.split("=", 1)[1].split(".")[-1] for x in args if x.startswith("--utility-sub-type=")), t)
    return t


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default=os.environ.get("OXWRIGHT_BENCH_CORPUS"),
                   required="OXWRIGHT_BENCH_CORPUS" not in os.environ,
                   help="output dir of bench/quality/prepare.py (default: $OXWRIGHT_BENCH_CORPUS)")
    p.add_argument("--pages", type=int, default=200)
    p.add_argument("--name", required=True)
    p.add_argument("--peer", choices=["oxwright", "playwright"], default="oxwright")
    p.add_argument("--config", default="", help="TOML lines for the [browser] table")
    p.add_argument("--args", default="", help="more `oxwright batch` flags, space-separated (e.g. '--frames load')")
    p.add_argument("--oxwright", default="target/release/oxwright")
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "oxwright-pss"),
                   help="scratch dir, one subdir per --name (default: oxwright-pss under the system temp dir)")
    p.add_argument("--results", default=None, help="JSON lines file to append to")
    p.add_argument("--default-admission", action="store_true",
                   help="leave oxwright's admission at its default (4 pages in flight, moved up to 8 "
                        "while the CPU has room) instead of fixing it at 4")
    a = p.parse_args()

    corpus = Path(a.corpus)
    server = peers.Server(corpus / "pages")
    pages = peers.pick_pages(corpus, a.pages)
    out = Path(a.work) / a.name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    urls = [(pg["id"], f"http://127.0.0.1:{server.port}/{pg['id']}.html") for pg in pages]
    if a.peer == "oxwright":
        (out / "urls.txt").write_text("".join(u + "\n" for _, u in urls))
        (out / "cfg.toml").write_text("[browser]\n" + a.config.replace("\\n", "\n") + "\n")
        cmd = [a.oxwright, "batch", "--config", str(out / "cfg.toml"),
               "--allow-host", f"127.0.0.1:{server.port}", "--block", "image,font,media",
               "--out", str(out / "store"), "--json",
               *([] if a.default_admission else ["--pages-per-browser", "4", "--max-pages-per-browser", "4"]),
               *a.args.split(), str(out / "urls.txt")]
    else:
        (out / "md").mkdir()
        (out / "urls.tsv").write_text("".join(f"{i}\t{u}\n" for i, u in urls))
        cmd = ["node", str(HERE / "node" / "playwright_run.mjs"), str(out / "urls.tsv"), str(out / "md"), "4"]

    samples = []
    # The largest sample's processes: (PSS MiB, type) each.
    peak = [0.0, []]
    times = []
    stop = threading.Event()

    def sample():
        me = __import__("os").getpid()
        while not stop.is_set():
            pids = peers.descendants(me)
            chromium = [x for x in pids if "chrom" in comm(x)]
            renderers = [x for x in chromium if "--type=renderer" in cmdline(x)]
            per = [(x, peers.pss_kib([x]) / 1024) for x in chromium]
            total = sum(m for _, m in per)
            times.append(time.monotonic() - t0)
            samples.append((total, sum(m for x, m in per if x in renderers),
                            len(chromium), len(renderers)))
            if total > peak[0]:
                peak[0] = total
                peak[1] = sorted(((round(m), kind(x)) for x, m in per), reverse=True)
            stop.wait(0.1)

    t0 = time.monotonic()
    with open(out / "log.txt", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        th = threading.Thread(target=sample, daemon=True)
        th.start()
        rc = proc.wait()
    wall = time.monotonic() - t0
    stop.set()
    th.join()
    peers.reap_all(None)

    (out / "samples.tsv").write_text("".join(
        f"{t:.1f}\t{s[0]:.0f}\t{s[1]:.0f}\t{s[2]}\t{s[3]}\n" for t, s in zip(times, samples)))
    live = [s for s in samples if s[3] >= 1] or [(0, 0, 0, 0)]
    if a.peer == "oxwright":
        ok = sum(1 for m in (out / "store").glob("batches/*/manifest.jsonl")
                 for line in m.read_text().splitlines() if json.loads(line).get("status") == "ok")
    else:
        ok = len(list((out / "md").glob("*.md")))
    res = {
        "name": a.name, "peer": a.peer, "config": a.config, "rc": rc, "pages": a.pages, "ok": ok,
        "admission": "default" if a.default_admission else "fixed at 4",
        "wall_s": round(wall, 1), "pages_per_s": round(a.pages / wall, 2),
        "chromium_pss_peak_mib": round(max(s[0] for s in live)),
        "chromium_pss_median_mib": round(statistics.median(s[0] for s in live)),
        "renderers_pss_peak_mib": round(max(s[1] for s in live)),
        "peak_processes": [f"{k} {m}" for m, k in peak[1]],
        "peak_at_s": round(times[samples.index(max(samples))], 1),
        "chromium_processes_max": max(s[2] for s in live), "renderers_max": max(s[3] for s in live),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    if a.peer == "oxwright":
        # "oxwright 0.1.0 (<commit>)": the build the figures are of.
        res["version"] = subprocess.run([a.oxwright, "--version"], capture_output=True, text=True).stdout.strip()
    peers.emit(res, a.results)


if __name__ == "__main__":
    main()
