#!/usr/bin/env python3
"""Where a fetch batch's CPU goes, by process, and an interleaved A/B of
oxwright binaries.

Serves the first N pages of the peers bench (`peers.py`'s page choice and
server) on loopback and runs `oxwright batch --render always` over them
with the peers bench's oxwright configuration (one browser, admission
pinned to `--concurrency`, the same Chromium flags, images, fonts and
media blocked), once per binary per round, the binaries' order reversed
every round. Every 200 ms it walks the batch's process tree
(`/proc/<pid>/task/<tid>/children`) and keeps each process's user and
system CPU time, its kind read from its command line (`oxwright`,
`browser`, `renderer`, `gpu-process`, `utility:NetworkService`, ...).

Prints, per run, pages/s and CPU ms per page by kind; then the median
pages/s and CPU ms/page of each binary. A process that lives less than one
sampling interval is missed, so the totals run a little under a cgroup's.

    python3 bench/peers/cpu_split.py --corpus CORPUS \\
        --oxwright A=path/to/oxwright --oxwright B=other/oxwright --rounds 3

CORPUS is the output directory of `bench/quality/prepare.py`.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import peers  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            out += [int(x) for x in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
    except OSError:
        pass
    return out


def kind(pid: int) -> tuple[str, bool] | None:
    """The process's kind, and whether it is final (a `--type=` process).
    Chromium rewrites its children's command lines into one string, so
    the switches are searched for, not split out."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    if not cmd:
        return None  # exited: a zombie has no command line
    t = re.search(rb"--type=([^\s\0]+)", cmd)
    if t:
        k = t.group(1).decode(errors="replace")
        sub = re.search(rb"--utility-sub-type=([^\s\0]+)", cmd)
        if sub:
            k += ":" + sub.group(1).decode(errors="replace").split(".")[-1]
        # The zygote's children carry its command line until they become renderers.
        return k, k != "zygote"
    name = os.path.basename(re.split(rb"[\s\0]", cmd, maxsplit=1)[0].decode(errors="replace"))
    if "oxwright" in name:
        return "oxwright", False
    if "chrom" in name:
        return "browser", False
    return name or "?", False


def run(binary: str, cfg: Path, urls: Path, port: int, work: Path, pages: int) -> dict:
    store = work / "store"
    shutil.rmtree(store, ignore_errors=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OXWRIGHT_") and k not in ("CHROME_PATH", "CHROME_URL")}
    t0 = time.monotonic()
    with open(work / "log.txt", "w") as log:
        p = subprocess.Popen([binary, "--config", cfg, "batch", "--render", "always",
                              "--allow-host", f"127.0.0.1:{port}", "--block", "image,font,media",
                              "--out", store, "--json", urls],
                             stdout=subprocess.DEVNULL, stderr=log, env=env)
        seen: dict[int, list] = {}
        while p.poll() is None:
            todo = [p.pid]
            while todo:
                pid = todo.pop()
                todo += children(pid)
                try:
                    st = Path(f"/proc/{pid}/stat").read_text()
                    f = st[st.rindex(")") + 2:].split()
                    user, system = int(f[11]) / TICK, int(f[12]) / TICK
                except OSError:
                    continue
                k, final = seen.get(pid, (None, False, 0, 0))[:2]
                # A child is first seen between fork and exec (or before
                # the browser's wrapper script execs it): look again.
                if pid == p.pid:
                    k, final = "oxwright", True
                elif not final:
                    k, final = kind(pid) or (k, False)
                seen[pid] = (k, final, user, system)
            time.sleep(0.2)
    wall = time.monotonic() - t0
    by_kind: dict[str, list] = {}
    for k, _, user, system in seen.values():
        a = by_kind.setdefault(k or "?", [0, 0.0, 0.0])
        a[0] += 1
        a[1] += user
        a[2] += system
    cpu = sum(u + s for _, u, s in by_kind.values())
    return {
        "pages_per_s": round(pages / wall, 3),
        "cpu_ms_per_page": round(cpu * 1000 / pages, 1),
        "rc": p.returncode,
        "by_kind": {k: {"processes": n, "user_ms_per_page": round(u * 1000 / pages, 1),
                        "system_ms_per_page": round(s * 1000 / pages, 1)}
                    for k, (n, u, s) in sorted(by_kind.items(), key=lambda x: -x[1][1] - x[1][2])},
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True, help="output dir of bench/quality/prepare.py")
    p.add_argument("--pages", type=int, default=200)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--oxwright", action="append", default=None,
                   help="NAME=PATH (or PATH), repeatable; default target/release/oxwright")
    p.add_argument("--chromium", default=peers.CHROMIUM)
    p.add_argument("--work", default=None)
    p.add_argument("--json", default=None, help="write the runs here")
    a = p.parse_args()
    binaries = []
    for spec in a.oxwright or ["target/release/oxwright"]:
        name, _, path = spec.rpartition("=")
        binaries.append((name or path, str(Path(path).resolve())))
    corpus = Path(a.corpus).resolve()
    pages = peers.pick_pages(corpus, a.pages)
    server = peers.Server(corpus / "pages")
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="oxwright-cpu-split-"))
    work.mkdir(parents=True, exist_ok=True)
    urls = work / "urls.txt"
    urls.write_text("".join(f"http://127.0.0.1:{server.port}/{t['id']}.html\n" for t in pages))
    cfg = work / "oxwright.toml"
    cfg.write_text(peers.oxwright_config(a, peers.parse_variant("always")))
    runs = []
    for r in range(a.rounds):
        order = binaries if r % 2 == 0 else list(reversed(binaries))
        for name, path in order:
            m = run(path, cfg, urls, server.port, work, len(pages))
            m.update(binary=name, round=r + 1)
            runs.append(m)
            print(f"round {r + 1} {name}: {m['pages_per_s']} pages/s, {m['cpu_ms_per_page']} CPU ms/page"
                  f" (rc {m['rc']})")
            for k, v in m["by_kind"].items():
                print(f"    {k:28s} {v['processes']:4d} processes  user {v['user_ms_per_page']:6.1f}"
                      f"  system {v['system_ms_per_page']:6.1f} ms/page")
    print("\n| binary | pages/s (median) | CPU ms/page (median) |\n|---|---:|---:|")
    for name, _ in binaries:
        mine = [m for m in runs if m["binary"] == name]
        print(f"| {name} | {statistics.median(m['pages_per_s'] for m in mine):.2f} "
              f"| {statistics.median(m['cpu_ms_per_page'] for m in mine):.0f} |")
    if a.json:
        Path(a.json).write_text(json.dumps({"pages": len(pages), "concurrency": a.concurrency,
                                            "chromium": a.chromium, "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
