#!/usr/bin/env python3
"""Reads jemalloc's statistics out of a memory soak and says what moved.

Build the binary with jemalloc's statistics and have it print them every
2.5 GiB allocated, then run the soak and read its work directory:

    cargo build --release -p oxwright --features heap-stats
    _RJEM_MALLOC_CONF=stats_interval:2684354560 \\
        python3 bench/peers/soak.py --corpus CORPUS --pages 10000 --work WORK
    python3 bench/peers/heapstats.py WORK

(WORK defaults to soak.py's default, oxwright-soak under the system temp
dir.)

Each print of the statistics lands in the soak's `log.txt` after some
JSON log line, whose timestamp dates it; the manifest's `finished_at`
turns that into pages done, and the soak's 2 s samples give the process's
anonymous RSS at that many pages. Printed: medians per 1,000 pages of
what jemalloc holds (MiB):

- allocated: live bytes (small: under 16 KiB; large: the rest);
- frag: active − allocated, pages of slabs that are partly free;
- dirty: freed pages kept for reuse until they decay;
- tcache, metadata, resident (jemalloc's own estimate; it counts
  pages never touched, so it can exceed the process's anonymous RSS);
- anon: the process's anonymous RSS, from the soak's samples;

then, from page 1,000 on, each one's least-squares slope per 1,000 pages
and its correlation with anonymous RSS across prints. A leak shows as a
positive slope of `allocated`, fragmentation as one of `frag`.
"""

import bisect
import json
import os
import re
import statistics as st
import sys
import tempfile
from pathlib import Path

M = 2**20


def prints(log: Path):
    """Yields one dict per statistics print: the merged arenas' figures."""
    cur, ts, merged = None, None, False
    for line in log.open(errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("{"):
            try:
                ts = json.loads(line)["timestamp"]
            except (ValueError, KeyError):
                pass
            continue
        if line.startswith("Allocated:"):
            fields = dict(re.findall(r"(\w+): (\d+)", line))
            cur = {"ts": ts, **{k.lower(): int(v) for k, v in fields.items() if k != "n_thp"}}
            merged = False
            continue
        if cur is None:
            continue
        if line.startswith("Merged arenas"):
            merged = True
        elif line.startswith("arenas["):
            merged = False
        s = line.split()
        if merged and s:
            if s[0] == "assigned":
                cur["threads"] = int(s[2])
            elif s[0] == "dirty:":
                cur["dirty"] = int(s[2]) * 4096
            elif s[0] in ("small:", "large:") and s[1].isdigit():
                cur[s[0][:-1]] = int(s[1])
            elif s[0] == "tcache_bytes:":
                cur["tcache"] = int(s[1])
        if line.startswith("--- End"):
            if cur.get("ts"):
                yield cur
            cur = None


def main():
    work = Path(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.gettempdir(), "oxwright-soak"))
    finished = sorted(
        json.loads(line)["finished_at"][:26]
        for m in work.glob("store/batches/*/manifest.jsonl")
        for line in m.read_text().splitlines()
    )
    samples = [json.loads(line) for line in (work / "samples.jsonl").read_text().splitlines()]
    at = [s["pages"] for s in samples]
    rows = []
    for p in prints(work / "log.txt"):
        pages = bisect.bisect_right(finished, p["ts"][:26])
        d = {"pages": pages, "threads": p.get("threads", 0)}
        for k in ("allocated", "small", "large", "active", "dirty", "tcache", "metadata", "resident"):
            d[k] = p.get(k, 0) / M
        d["frag"] = d["active"] - d["allocated"]
        # The sample taken nearest that many pages.
        i = min(bisect.bisect_left(at, pages), len(at) - 1)
        d["anon"] = samples[i]["anon_mib"]
        rows.append(d)
    if not rows:
        sys.exit(f"no jemalloc statistics in {work / 'log.txt'} (a --features heap-stats build with stats_interval?)")

    keys = ["allocated", "small", "large", "frag", "dirty", "tcache", "metadata", "resident", "anon", "threads"]
    print(f"{len(rows)} statistics prints; medians per 1,000 pages, MiB")
    print(f"{'pages':>6} {'n':>3} " + " ".join(f"{k[:9]:>9}" for k in keys))
    for lo in range(0, max(r["pages"] for r in rows) + 1, 1000):
        sel = [r for r in rows if lo <= r["pages"] < lo + 1000]
        if sel:
            print(f"{lo:>6} {len(sel):>3} " + " ".join(f"{st.median(r[k] for r in sel):9.1f}" for k in keys))

    late = [r for r in rows if r["pages"] >= 1000]
    if len(late) < 3:
        return
    xs = [r["pages"] for r in late]
    mx = st.mean(xs)
    print(f"\nfrom page 1,000 ({len(late)} prints): slope per 1,000 pages, correlation with anon")
    for k in keys[:-1]:
        ys = [r[k] for r in late]
        my = st.mean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        corr = st.correlation(ys, [r["anon"] for r in late]) if len(set(ys)) > 1 else float("nan")
        print(f"{k:>10} {slope * 1000:+7.2f} MiB   {corr:+.2f}")


if __name__ == "__main__":
    main()
