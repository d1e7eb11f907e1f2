#!/usr/bin/env python3
"""Peers in the bench (issue 12 item 5): oxwright, crawl4ai and a plain
Playwright script on the same pages, in one invocation, interleaved.

The pages are a fixed subset of the quality corpus (`bench/quality/prepare.py`,
BENCHMARKS.md section 8): the first N page ids ordered by SHA-256 of the id.
One HTTP server in this process serves them on loopback (`/<id>.html` only,
the same Content-Type rule as `oxwright-bench quality`; anything else is 404).
Every tool blocks images, fonts and media itself and runs Debian's
/usr/bin/chromium with 4 pages in flight. Each round runs every peer once,
one after the other, and the order flips every round.

Per run, of the peer's whole process tree:
- pages/s = pages / wall time from spawn to exit (start-up included);
- CPU ms per page = user + system time of every descendant, exited ones
  included: this process is a child subreaper (PR_SET_CHILD_SUBREAPER), so
  orphans are re-parented to it and reaped here, and the delta of
  getrusage(RUSAGE_CHILDREN) holds them all (nothing else runs as our child
  during a measured run);
- peak PSS MiB = the highest sum of /proc/<pid>/smaps_rollup `Pss` over all
  our descendants, sampled every 200 ms;
- failed = pages of the subset with no (or empty) Markdown;
- F1 = `oxwright-bench score-md` (the `quality` scorer) on the peer's
  Markdown: snippet F1 on the trafilatura pages, mean word F1 on the
  readability pages; a failed page counts as empty output. The same is also
  given on the pages every peer converted in that round.

Usage (see BENCHMARKS.md section 10):
  python3 bench/peers/peers.py --corpus /tmp/oxq --pages 200 --rounds 2 \
      --oxwright target/release/oxwright --score-bin <oxwright-bench> \
      --python /work/peers-venv/bin/python --json bench/results/peers.json
"""

import argparse
import ctypes
import hashlib
import http.server
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PR_SET_CHILD_SUBREAPER = 36


def content_type(data: bytes) -> str:
    """As `content_type` in bench/src/quality/mod.rs."""
    head = data[:4096].decode("utf-8", "replace").lower()
    try:
        data.decode("utf-8")
        utf8 = True
    except UnicodeDecodeError:
        utf8 = False
    return "text/html; charset=utf-8" if utf8 and "charset" not in head else "text/html"


class Server:
    """Serves `<pages>/<id>.html`; counts requests (first request time per run)."""

    def __init__(self, pages: Path):
        outer = self
        self.first_request = None
        self.requests = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802
                outer.requests += 1
                if outer.first_request is None:
                    outer.first_request = time.monotonic()
                name = self.path.split("?", 1)[0].lstrip("/")
                body, ctype, code = b"not found", "text/plain", 404
                if "/" not in name and ".." not in name and name.endswith(".html"):
                    try:
                        body = (pages / name).read_bytes()
                        ctype, code = content_type(body), 200
                    except OSError:
                        pass
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        class Quiet(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a browser closing a tab mid-response

        self.httpd = Quiet(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def descendants(root: int) -> list[int]:
    """Every live descendant of `root` (by /proc ppid)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def pss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            pass
    return total


class Sampler(threading.Thread):
    """Peak PSS and process count of our descendants, every 200 ms."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.peak_kib = 0
        self.peak_procs = 0
        self.loads = []

    def run(self):
        me = os.getpid()
        while not self.stop.is_set():
            pids = descendants(me)
            self.peak_procs = max(self.peak_procs, len(pids))
            self.peak_kib = max(self.peak_kib, pss_kib(pids))
            self.stop.wait(0.2)


def emit(res: dict, results) -> None:
    """Prints a run's JSON line and appends it to `results` when given."""
    print(json.dumps(res))
    if results:
        with open(results, "a") as f:
            f.write(json.dumps(res) + "\n")


def reap_all(deadline_s: float = 20.0) -> int:
    """Waits for every remaining child (re-parented orphans); kills what lingers."""
    killed = 0
    end = time.monotonic() + deadline_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return killed
        if pid:
            continue
        if time.monotonic() > end:
            for p in descendants(os.getpid()):
                try:
                    os.kill(p, signal.SIGKILL)
                    killed += 1
                except OSError:
                    pass
            end = time.monotonic() + 5
        time.sleep(0.05)


def children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_measured(cmd, log: Path, server: Server, env=None) -> dict:
    sampler = Sampler()
    server.first_request = None
    server.requests = 0
    cpu0 = children_cpu_s()
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    with open(log, "wb") as lf:
        proc = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, env=env)
        sampler.start()
        rc = proc.wait()
    wall = time.monotonic() - t0
    killed = reap_all()
    sampler.stop.set()
    sampler.join()
    cpu = children_cpu_s() - cpu0
    first = server.first_request
    return {
        "cmd": [str(c) for c in cmd],
        "rc": rc,
        "wall_s": wall,
        "startup_s": (first - t0) if first else None,
        "cpu_s": cpu,
        "peak_pss_mib": sampler.peak_kib / 1024,
        "peak_procs": sampler.peak_procs,
        "killed_leftovers": killed,
        "requests": server.requests,
        "loadavg_start": load0,
        "loadavg_end": os.getloadavg()[0],
    }


def pick_pages(corpus: Path, n: int) -> list[dict]:
    truth = [json.loads(l) for l in (corpus / "truth.jsonl").read_text().splitlines() if l.strip()]
    truth.sort(key=lambda t: hashlib.sha256(t["id"].encode()).hexdigest())
    return truth[:n]


# --- the peers ---------------------------------------------------------------


def run_oxwright(a, urls: list, out: Path, md: Path, server: Server) -> dict:
    lst = out / "urls.txt"
    lst.write_text("".join(u + "\n" for _, u in urls))
    store = out / "store"
    cmd = [a.oxwright, "batch", "--allow-host", f"127.0.0.1:{server.port}",
           "--block", "image,font,media", "--out", store, "--json", lst]
    m = run_measured(cmd, out / "log.txt", server)
    by_url = {u: i for i, u in urls}
    for manifest in store.glob("batches/*/manifest.jsonl"):
        for line in manifest.read_text().splitlines():
            e = json.loads(line)
            if e.get("status") != "ok":
                continue
            for art in e.get("artifacts", []):
                if art.endswith("page.md") and e["url"] in by_url:
                    shutil.copy(store / art, md / f"{by_url[e['url']]}.md")
    return m


def run_crawl4ai(a, urls: list, out: Path, md: Path, server: Server) -> dict:
    lst = out / "urls.tsv"
    lst.write_text("".join(f"{i}\t{u}\n" for i, u in urls))
    cmd = [a.python, HERE / "crawl4ai_run.py", lst, md, str(a.concurrency)]
    env = dict(os.environ, CRAWL4_AI_BASE_DIRECTORY=str(out), CRAWL4AI_NO_CLOUD_NOTICE="1")
    return run_measured(cmd, out / "log.txt", server, env=env)


def run_playwright(a, urls: list, out: Path, md: Path, server: Server) -> dict:
    lst = out / "urls.tsv"
    lst.write_text("".join(f"{i}\t{u}\n" for i, u in urls))
    cmd = [a.node, HERE / "node" / "playwright_run.mjs", lst, md, str(a.concurrency)]
    return run_measured(cmd, out / "log.txt", server)


PEERS = {"oxwright": run_oxwright, "crawl4ai": run_crawl4ai, "playwright": run_playwright}


def score(a, md: Path, ids_file: Path, name: str) -> dict:
    out_dir = Path(a.work) / "scores"
    subprocess.run(
        [a.score_bin, "--out-dir", out_dir, "--name", name, "score-md",
         "--corpus", a.corpus, "--dir", md, "--ids", ids_file],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rep = json.loads((out_dir / f"{name}.json").read_text())["results"]
    res = {}
    for s in rep["scores"]:
        prf = s["snippets"] or s["words"]
        res[s["corpus"]] = {"pages": s["pages"], "missing": s["missing"],
                            "precision": prf["precision"], "recall": prf["recall"], "f1": prf["f1"]}
    return res


def versions(a) -> dict:
    def sh(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
        except OSError:
            return ""
    pkg = lambda p: json.loads((HERE / "node" / "node_modules" / p / "package.json").read_text())["version"]
    return {
        "chromium": sh(["/usr/bin/chromium", "--version"]),
        "oxwright": sh([a.oxwright, "--version"]),
        "crawl4ai": sh([a.python, "-c", "import crawl4ai; print(crawl4ai.__version__.__version__)"]),
        "playwright_core": pkg("playwright-core"),
        "turndown": pkg("turndown"),
        "node": sh([a.node, "--version"]),
    }


def busy_processes() -> list[str]:
    """Compilers and browsers not ours: what else loads the machine."""
    mine = set(descendants(os.getpid()))
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) not in mine:
            try:
                comm = Path(f"/proc/{d}/comm").read_text().strip()
            except OSError:
                continue
            if comm in ("rustc", "cargo", "chromium", "chrome", "cc1", "cc1plus", "ld", "node"):
                out.append(comm)
    return sorted(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default="/tmp/oxq")
    p.add_argument("--pages", type=int, default=200)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--peers", default="oxwright,crawl4ai,playwright")
    p.add_argument("--oxwright", default="target/release/oxwright")
    p.add_argument("--score-bin", default="target/debug/oxwright-bench")
    p.add_argument("--python", default="/work/peers-venv/bin/python")
    p.add_argument("--node", default="node")
    p.add_argument("--work", default="/tmp/oxwright-peers")
    p.add_argument("--json", default=None, help="results JSON (e.g. bench/results/peers.json)")
    a = p.parse_args()
    a.corpus = Path(a.corpus)
    peers = [x for x in a.peers.split(",") if x]

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")

    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    pages = pick_pages(a.corpus, a.pages)
    ids = [t["id"] for t in pages]
    ids_file = work / "ids.txt"
    ids_file.write_text("".join(i + "\n" for i in ids))
    server = Server(a.corpus / "pages")
    urls = [(i, f"http://127.0.0.1:{server.port}/{i}.html") for i in ids]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    meta = {
        "date": started,
        "command": " ".join(sys.argv),
        "cores": os.cpu_count(),
        "loadavg_at_start": Path("/proc/loadavg").read_text().strip(),
        "other_processes_at_start": busy_processes(),
        "pages": len(ids),
        "corpus_split": {c: sum(t["corpus"] == c for t in pages) for c in sorted({t["corpus"] for t in pages})},
        "versions": versions(a),
    }
    print(json.dumps(meta, indent=1), flush=True)

    runs = []
    for r in range(a.rounds):
        order = peers if r % 2 == 0 else list(reversed(peers))
        round_runs = {}
        for peer in order:
            out = work / f"r{r + 1}" / peer
            md = out / "md"
            md.mkdir(parents=True)
            m = PEERS[peer](a, urls, out, md, server)
            converted = [i for i in ids if (md / f"{i}.md").exists() and (md / f"{i}.md").read_text(errors="replace").strip()]
            m.update(peer=peer, round=r + 1, converted=len(converted), failed=len(ids) - len(converted),
                     failed_ids=sorted(set(ids) - set(converted)),
                     pages_per_s=len(ids) / m["wall_s"],
                     pages_per_s_after_start=(len(ids) / (m["wall_s"] - m["startup_s"])) if m["startup_s"] else None,
                     cpu_ms_per_page=m["cpu_s"] * 1000 / len(ids),
                     other_processes_at_end=busy_processes())
            m["f1_all"] = score(a, md, ids_file, f"{peer}-r{r + 1}")
            round_runs[peer] = (m, set(converted), md)
            print(f"round {r + 1} {peer}: {m['pages_per_s']:.2f} pages/s, {m['cpu_ms_per_page']:.0f} CPU ms/page, "
                  f"{m['peak_pss_mib']:.0f} MiB, failed {m['failed']}, F1 "
                  + ", ".join(f"{c} {v['f1']:.3f}" for c, v in m["f1_all"].items()), flush=True)
        common = set(ids)
        for _, conv, _ in round_runs.values():
            common &= conv
        cfile = work / f"r{r + 1}" / "common.txt"
        cfile.write_text("".join(i + "\n" for i in sorted(common)))
        for peer, (m, _, md) in round_runs.items():
            m["common_pages"] = len(common)
            m["f1_common"] = score(a, md, cfile, f"{peer}-r{r + 1}-common")
            runs.append(m)

    summary = {}
    for peer in peers:
        rs = [m for m in runs if m["peer"] == peer]
        med = lambda k: statistics.median(m[k] for m in rs)
        f1 = lambda key, c: statistics.median(m[key][c]["f1"] for m in rs if c in m[key])
        corpora = sorted(rs[0]["f1_all"])
        summary[peer] = {
            "pages_per_s": med("pages_per_s"),
            "cpu_ms_per_page": med("cpu_ms_per_page"),
            "peak_pss_mib": med("peak_pss_mib"),
            "failed": [m["failed"] for m in rs],
            "startup_s": med("startup_s") if all(m["startup_s"] is not None for m in rs) else None,
            "pages_per_s_after_start": med("pages_per_s_after_start") if all(m["startup_s"] for m in rs) else None,
            "f1_all": {c: f1("f1_all", c) for c in corpora},
            "f1_common": {c: f1("f1_common", c) for c in corpora},
        }
    meta["loadavg_at_end"] = Path("/proc/loadavg").read_text().strip()
    result = {"machine": meta, "summary": summary, "runs": runs}
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {a.json}", file=sys.stderr)
    print(table(summary, meta))


def table(summary: dict, meta: dict) -> str:
    corp = sorted(next(iter(summary.values()))["f1_all"])
    head = "| peer | pages/s | pages/s after start-up | start-up s | CPU ms/page (tree) | peak PSS MiB (tree) | failed (per round) | " + " | ".join(
        f"F1 {c} (all / common)" for c in corp) + " |"
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(corp)]
    opt = lambda v, f: format(v, f) if v is not None else "-"
    for peer, s in summary.items():
        lines.append(f"| {peer} | {s['pages_per_s']:.2f} | {opt(s['pages_per_s_after_start'], '.2f')} | "
                     f"{opt(s['startup_s'], '.1f')} | {s['cpu_ms_per_page']:.0f} | {s['peak_pss_mib']:.0f} | "
                     f"{' / '.join(map(str, s['failed']))} | "
                     + " | ".join(f"{s['f1_all'][c]:.3f} / {s['f1_common'][c]:.3f}" for c in corp) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
