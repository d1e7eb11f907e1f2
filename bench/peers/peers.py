#!/usr/bin/env python3
"""Peers in the bench: oxwright, crawl4ai, a plain Playwright script and
trafilatura on the same pages, under the same conditions, in one
invocation, interleaved.

Pages: a fixed subset of the quality corpus (`bench/quality/prepare.py`,
BENCHMARKS.md section 8): the first N page ids ordered by SHA-256 of the id.
One HTTP server in this process serves them on loopback (`/<id>.html` only,
the same Content-Type rule as `oxwright-bench quality`; anything else is 404).

The same conditions for every peer:
- the same browser, headless: `--chromium` (default Debian's
  /usr/bin/chromium; /usr/lib/chromium/chromium-headless-shell is the
  headless-only build that Playwright runs headless), passed to crawl4ai and the
  Playwright script as `$PEERS_CHROMIUM` and to oxwright as `chrome_path`;
- the same Chromium flags, added to each tool's own (CHROMIUM_FLAGS below):
  `--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1`, so a lookup
  of any host but the loopback server fails at once (the pages reference
  external hosts; without the rule Chromium's resolver waits for the
  network to fail, which oxwright's egress proxy does not), and
  `--blink-settings=imagesEnabled=false`. oxwright gets them through a
  config file written per variant (`[browser] extra_args`); crawl4ai
  through `BrowserConfig(extra_args=...)`; Playwright through
  `chromium.launch({args})`. Every tool also aborts image, font and media
  requests itself;
- the same cap on pages in flight (`--concurrency`, default 4): crawl4ai's
  `MemoryAdaptiveDispatcher(max_session_permit=N)`, N Playwright workers,
  and oxwright's admission pinned to N (`[browser] pages_per_browser = N`,
  `max_pages_per_browser = N`, one browser). oxwright variants ending in
  `-adaptive` keep its default admission instead (4 pages per browser to
  begin with, moved by the CPU up to twice that) and are reported beside
  the pinned ones.

trafilatura (`--peers trafilatura`, `trafilatura_run.py`) reads the served
HTML with no browser, the HTTP-only pipeline to compare `--render auto` and
`never` with; it runs as two peers: one worker process per core, and
`--concurrency` threads in one process.

oxwright variants (`--oxwright-variants`, comma-separated; each a peer
`oxwright-<variant>` in the output): `<render>[-shared][-adaptive]`, where
`<render>` is `always`, `auto` or `never` (passed as `oxwright batch
--render <render>`), `-shared` sets `[browser] isolation = "shared"` (the
browser's jobs share its default context) and `-adaptive` is described
above. `--peers oxwright` expands to every variant. The environment's
OXWRIGHT_* and CHROME_* variables are removed for oxwright's runs, so that
only the config file and the flags shape them.

Rounds: each round runs every peer once, one after the other; the order
reverses every round (over each pair of rounds every peer has the same
mean position). Figures are medians over the rounds.

Per run, of the peer's whole process tree:
- pages/s = pages / wall time from spawn to exit (start-up included;
  "after start-up" counts from the first request the server sees);
- CPU ms per page = user + system time of every process of the tree,
  exited ones included. Each run gets its own cgroup v2 (a child of this
  process's cgroup, else of the cgroup2 mount's root); the peer is started
  inside it (`sh -c 'echo $$ > cgroup.procs; exec ...'`), so everything it
  spawns is in it, and the figure is `usage_usec` of its `cpu.stat` after
  the tree has exited. Where no cgroup v2 is writable, the figure is the
  delta of getrusage(RUSAGE_CHILDREN) instead: this process is a child
  subreaper (PR_SET_CHILD_SUBREAPER), so orphans are re-parented to it and
  reaped here, and nothing else runs as its child during a measured run.
  `cpu_source` in the JSON says which; `cpu_s_rusage` is kept beside it as
  a cross-check either way;
- peak PSS MiB = the highest sum of /proc/<pid>/smaps_rollup `Pss` over the
  run's processes (its cgroup's members, else our descendants), sampled
  every 200 ms;
- failed = pages of the subset with no (or empty) Markdown, each with the
  tool's error message (oxwright: the manifest's error; crawl4ai and
  Playwright: their `FAIL <id> <message>` lines);
- F1 = `oxwright-bench score-md` (the `quality` scorer) on the peer's
  Markdown: snippet F1 on the trafilatura pages, mean word F1 on the
  readability pages; a failed page counts as empty output. The same is also
  given on the pages every peer converted in that round. `--no-score`
  skips it (no scorer binary needed).

Set-up (once):
  python3 bench/quality/prepare.py --trafilatura <mirror of adbar/trafilatura> \\
      --readability <mirror of mozilla/readability> --out <corpus dir>
  python3 -m venv <venv> && <venv>/bin/pip install -r bench/peers/requirements.txt
  (cd bench/peers/node && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci)

Usage (see BENCHMARKS.md section 10):
  python3 bench/peers/peers.py --corpus <corpus dir> --pages 200 --rounds 2 \\
      --oxwright target/release/oxwright --score-bin target/release/oxwright-bench \\
      --python <venv>/bin/python --oxwright-variants always,always-adaptive \\
      --json bench/results/peers.json
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
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def publishable(text: str, names: dict) -> str:
    """Results are committed: the run's own directories are replaced by
    their names (`<work>`), and paths inside the repository made relative."""
    for path, name in sorted(names.items(), key=lambda kv: -len(kv[0])):
        if path:
            text = text.replace(json.dumps(path)[1:-1], name)
    return text.replace(json.dumps(str(REPO) + "/")[1:-1], "")
PR_SET_CHILD_SUBREAPER = 36
CHROMIUM = "/usr/bin/chromium"
# Added to every Chromium-based peer's own flags.
CHROMIUM_FLAGS = [
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--blink-settings=imagesEnabled=false",
]
RENDER_MODES = ("always", "auto", "never")
# oxwright's default admission (workers/src/config.rs): pages_per_browser
# to begin with, up to twice that.
OXWRIGHT_DEFAULT_PAGES = 4
MARKER = ".oxwright-peers"


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


# --- process trees: cgroup v2, else our descendants ---------------------------


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


def cgroup2_parent() -> Path | None:
    """A fresh cgroup v2 directory of ours, under which each run gets one;
    None when no cgroup v2 hierarchy is mounted and writable here."""
    mount = None
    try:
        for line in Path("/proc/self/mounts").read_text().splitlines():
            f = line.split()
            if len(f) > 2 and f[2] == "cgroup2":
                mount = Path(f[1].replace("\\040", " "))
                break
        own = next((l[3:] for l in Path("/proc/self/cgroup").read_text().splitlines()
                    if l.startswith("0::")), None)
    except OSError:
        return None
    if mount is None:
        return None
    bases = ([mount / own.strip("/")] if own and own.strip("/") else []) + [mount]
    for base in bases:
        d = base / f"oxwright-peers-{os.getpid()}"
        try:
            d.mkdir()
        except OSError:
            continue
        if (d / "cpu.stat").exists() and (d / "cgroup.procs").exists():
            return d
        try:
            d.rmdir()
        except OSError:
            pass
    return None


class RunCgroup:
    """One run's cgroup v2: the peer is started in it; CPU and members."""

    def __init__(self, parent: Path, name: str):
        self.path = parent / name
        self.path.mkdir()

    def wrap(self, cmd: list) -> list:
        # sh moves itself into the cgroup, then becomes the peer.
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs"),
                *[str(c) for c in cmd]]

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def cpu_s(self) -> float:
        stat = dict(l.split() for l in (self.path / "cpu.stat").read_text().splitlines() if l.strip())
        return int(stat["usage_usec"]) / 1e6

    def kill(self) -> int:
        pids = self.pids()
        if not pids:
            return 0
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        return len(pids)

    def remove(self) -> None:
        rmdir_retry(self.path)


def rmdir_retry(path: Path) -> None:
    """Removes an (emptied) cgroup directory, retrying while it drains."""
    for _ in range(100):
        try:
            path.rmdir()
            return
        except OSError:
            time.sleep(0.05)


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
    """Peak PSS and process count of the run's processes, every 200 ms."""

    def __init__(self, pids):
        super().__init__(daemon=True)
        self.pids = pids
        self.stop = threading.Event()
        self.peak_kib = 0
        self.peak_procs = 0

    def run(self):
        while not self.stop.is_set():
            pids = self.pids()
            self.peak_procs = max(self.peak_procs, len(pids))
            self.peak_kib = max(self.peak_kib, pss_kib(pids))
            self.stop.wait(0.2)


def emit(res: dict, results) -> None:
    """Prints a run's JSON line and appends it to `results` when given
    (soak.py, chromium_pss.py)."""
    print(json.dumps(res))
    if results:
        with open(results, "a") as f:
            f.write(json.dumps(res) + "\n")


def reap_all(cg: "RunCgroup | None", deadline_s: float = 20.0) -> int:
    """Waits for every remaining child (re-parented orphans) and member of
    the run's cgroup; kills what lingers past the deadline."""
    killed = 0
    end = time.monotonic() + deadline_s
    while True:
        try:
            while True:
                pid, _ = os.waitpid(-1, os.WNOHANG)
                if not pid:
                    break
            children = True
        except ChildProcessError:
            children = False
        members = cg.pids() if cg else []
        if not children and not members:
            return killed
        if time.monotonic() > end:
            if cg:
                killed += cg.kill()
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


def run_measured(a, cmd, log: Path, server: Server, name: str, env=None) -> dict:
    cg = RunCgroup(a.cgroup_parent, name) if a.cgroup_parent else None
    me = os.getpid()
    sampler = Sampler(cg.pids if cg else (lambda: descendants(me)))
    server.first_request = None
    server.requests = 0
    cpu0 = children_cpu_s()
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    with open(log, "wb") as lf:
        proc = subprocess.Popen(cg.wrap(cmd) if cg else cmd, stdout=lf, stderr=subprocess.STDOUT, env=env)
        sampler.start()
        try:
            rc = proc.wait(timeout=a.run_timeout or None)
        except subprocess.TimeoutExpired:
            rc = "timeout"
    wall = time.monotonic() - t0
    if rc == "timeout":
        if cg:
            cg.kill()
        for p in descendants(me):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
    killed = reap_all(cg)
    sampler.stop.set()
    sampler.join()
    rusage = children_cpu_s() - cpu0
    cpu = rusage
    if cg:
        cpu = cg.cpu_s()
        cg.remove()
    first = server.first_request
    return {
        "cmd": [str(c) for c in cmd],
        "rc": rc,
        "wall_s": wall,
        "startup_s": (first - t0) if first else None,
        "cpu_s": cpu,
        "cpu_source": "cgroup" if cg else "rusage",
        "cpu_s_rusage": rusage,
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


def fail_lines(log: Path) -> dict:
    """`FAIL <id> <message>` lines of a peer's log, by id (the last wins)."""
    out = {}
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("FAIL "):
            parts = line.split(" ", 2)
            if len(parts) > 1:
                out[parts[1]] = parts[2].strip() if len(parts) > 2 else ""
    return out


# --- the peers ---------------------------------------------------------------


def parse_variant(v: str) -> dict:
    render, *opts = v.split("-")
    if render not in RENDER_MODES or not set(opts) <= {"shared", "adaptive"} or len(set(opts)) != len(opts):
        sys.exit(f"oxwright variant {v!r}: expected <render>[-shared][-adaptive], render one of "
                 + ", ".join(RENDER_MODES))
    return {"render": render, "shared": "shared" in opts, "adaptive": "adaptive" in opts}


def toml_list(xs) -> str:
    return "[" + ", ".join(json.dumps(x) for x in xs) + "]"


def oxwright_config(a, v: dict) -> str:
    lines = ["[browser]", f"chrome_path = {json.dumps(a.chromium)}", "browsers = 1",
             f"extra_args = {toml_list(CHROMIUM_FLAGS)}"]
    if not v["adaptive"]:
        lines += [f"pages_per_browser = {a.concurrency}", f"max_pages_per_browser = {a.concurrency}"]
    if v["shared"]:
        lines.append('isolation = "shared"')
    return "\n".join(lines) + "\n"


def run_oxwright(a, variant: str, urls: list, out: Path, md: Path, server: Server, name: str):
    v = parse_variant(variant)
    cfg = out / "oxwright.toml"
    cfg.write_text(oxwright_config(a, v))
    lst = out / "urls.txt"
    lst.write_text("".join(u + "\n" for _, u in urls))
    store = out / "store"
    cmd = [a.oxwright, "--config", cfg, "batch", "--render", v["render"],
           "--allow-host", f"127.0.0.1:{server.port}",
           "--block", "image,font,media", "--out", store, "--json", lst]
    env = {k: val for k, val in os.environ.items()
           if not k.startswith("OXWRIGHT_") and k not in ("CHROME_PATH", "CHROME_URL")}
    m = run_measured(a, cmd, out / "log.txt", server, name, env=env)
    by_url = {u: i for i, u in urls}
    errors = {}
    for manifest in store.glob("batches/*/manifest.jsonl"):
        for line in manifest.read_text().splitlines():
            e = json.loads(line)
            i = by_url.get(e.get("url"))
            if i is None:
                continue
            if e.get("status") != "ok":
                err = e.get("error") or {}
                errors[i] = f"{err.get('kind', e.get('status'))}: {err.get('message', '')}".strip()
                continue
            for art in e.get("artifacts", []):
                if art.endswith("page.md"):
                    shutil.copy(store / art, md / f"{i}.md")
    return m, errors


def run_crawl4ai(a, urls: list, out: Path, md: Path, server: Server, name: str):
    lst = out / "urls.tsv"
    lst.write_text("".join(f"{i}\t{u}\n" for i, u in urls))
    cmd = [a.python, HERE / "crawl4ai_run.py", lst, md, str(a.concurrency), *CHROMIUM_FLAGS]
    env = dict(os.environ, CRAWL4_AI_BASE_DIRECTORY=str(out), CRAWL4AI_NO_CLOUD_NOTICE="1")
    m = run_measured(a, cmd, out / "log.txt", server, name, env=env)
    return m, fail_lines(out / "log.txt")


def run_playwright(a, urls: list, out: Path, md: Path, server: Server, name: str):
    lst = out / "urls.tsv"
    lst.write_text("".join(f"{i}\t{u}\n" for i, u in urls))
    cmd = [a.node, HERE / "node" / "playwright_run.mjs", lst, md, str(a.concurrency), *CHROMIUM_FLAGS]
    m = run_measured(a, cmd, out / "log.txt", server, name)
    return m, fail_lines(out / "log.txt")


def run_trafilatura(a, how: str, n: int, urls: list, out: Path, md: Path, server: Server, name: str):
    lst = out / "urls.tsv"
    lst.write_text("".join(f"{i}\t{u}\n" for i, u in urls))
    cmd = [a.python, HERE / "trafilatura_run.py", lst, md, str(n), how]
    m = run_measured(a, cmd, out / "log.txt", server, name)
    return m, fail_lines(out / "log.txt")


def expand_peers(a) -> dict:
    """Peer name -> (runner, pages in flight), in the order given."""
    peers = {}
    for p in (x.strip() for x in a.peers.split(",")):
        if not p:
            continue
        if p == "oxwright":
            for v in (x.strip() for x in a.oxwright_variants.split(",")):
                if not v:
                    continue
                pv = parse_variant(v)
                cap = (f"{OXWRIGHT_DEFAULT_PAGES}-{2 * OXWRIGHT_DEFAULT_PAGES} adaptive" if pv["adaptive"]
                       else str(a.concurrency))
                peers[f"oxwright-{v}"] = (lambda a, *r, v=v: run_oxwright(a, v, *r), cap)
        elif p == "crawl4ai":
            peers[p] = (run_crawl4ai, str(a.concurrency))
        elif p == "playwright":
            peers[p] = (run_playwright, str(a.concurrency))
        elif p == "trafilatura":
            # Its better configuration on this machine: one process per core.
            n = os.cpu_count() or 2
            peers[f"trafilatura-{n}-processes"] = (
                lambda a, *r, n=n: run_trafilatura(a, "processes", n, *r), f"{n} processes")
            peers[f"trafilatura-{a.concurrency}-threads"] = (
                lambda a, *r: run_trafilatura(a, "threads", a.concurrency, *r), f"{a.concurrency} threads")
        else:
            sys.exit(f"unknown peer {p!r} (oxwright, crawl4ai, playwright, trafilatura)")
    if not peers:
        sys.exit("no peers")
    return peers


def score(a, md: Path, ids_file: Path, name: str) -> dict | None:
    if a.no_score:
        return None
    out_dir = Path(a.work) / "scores"
    r = subprocess.run(
        [a.score_bin, "--out-dir", out_dir, "--name", name, "score-md",
         "--corpus", a.corpus, "--dir", md, "--ids", ids_file],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"{a.score_bin} score-md failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    rep = json.loads((out_dir / f"{name}.json").read_text())["results"]
    res = {}
    for s in rep["scores"]:
        prf = s["snippets"] or s["words"]
        res[s["corpus"]] = {"pages": s["pages"], "missing": s["missing"],
                            "precision": prf["precision"], "recall": prf["recall"], "f1": prf["f1"]}
    return res


def versions(a, peers: dict) -> dict:
    def sh(cmd):
        try:
            return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    def pkg(p):
        try:
            return json.loads((HERE / "node" / "node_modules" / p / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            return ""

    v = {"chromium": sh([a.chromium, "--version"])}
    if any(p.startswith("oxwright-") for p in peers):
        v["oxwright"] = sh([a.oxwright, "--version"])
    if "crawl4ai" in peers:
        v["crawl4ai"] = sh([a.python, "-c", "import crawl4ai; print(crawl4ai.__version__.__version__)"])
        v["python"] = sh([a.python, "--version"])
    if any(p.startswith("trafilatura-") for p in peers):
        v["trafilatura"] = sh([a.python, "-c", "import trafilatura; print(trafilatura.__version__)"])
        v["python"] = sh([a.python, "--version"])
    if "playwright" in peers:
        v.update(playwright_core=pkg("playwright-core"), turndown=pkg("turndown"), node=sh([a.node, "--version"]))
    return v


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


def prepare_work(work: Path) -> None:
    """Empties `work` if this script made it, else refuses a non-empty one."""
    if work.exists() and any(work.iterdir()):
        if not (work / MARKER).exists():
            sys.exit(f"--work {work} is not empty and was not made by this script")
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    (work / MARKER).write_text("")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="output dir of bench/quality/prepare.py")
    p.add_argument("--pages", type=int, default=200)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--concurrency", type=int, default=4, help="pages in flight, every peer")
    p.add_argument("--peers", default="oxwright,crawl4ai,playwright")
    p.add_argument("--oxwright-variants", default="always,always-adaptive",
                   help="comma-separated <render>[-shared][-adaptive], render: always|auto|never")
    p.add_argument("--oxwright", default="target/release/oxwright")
    p.add_argument("--score-bin", default="target/release/oxwright-bench")
    p.add_argument("--no-score", action="store_true", help="skip F1 (no scorer binary needed)")
    p.add_argument("--python", default=None, help="Python of a venv with bench/peers/requirements.txt "
                   "(needed for the crawl4ai peer)")
    p.add_argument("--node", default="node")
    p.add_argument("--chromium", default=CHROMIUM, help="the Chromium every peer runs (e.g. "
                   "/usr/lib/chromium/chromium-headless-shell, the headless-only build Playwright "
                   "runs headless)")
    p.add_argument("--work", default=None, help="scratch dir (default: a new one under the system temp dir)")
    p.add_argument("--run-timeout", type=float, default=0, help="kill a run after this many seconds (0: never)")
    p.add_argument("--json", default=None, help="results JSON (e.g. bench/results/peers.json)")
    a = p.parse_args()
    a.corpus = Path(a.corpus).resolve()
    os.environ["PEERS_CHROMIUM"] = a.chromium  # crawl4ai_run.py, playwright_run.mjs
    peers = expand_peers(a)
    if any(x == "crawl4ai" or x.startswith("trafilatura-") for x in peers) and not a.python:
        sys.exit("the crawl4ai and trafilatura peers need --python <venv>/bin/python "
                 "(bench/peers/requirements.txt)")
    if any(x.startswith("oxwright-") for x in peers):
        a.oxwright = str(Path(a.oxwright).resolve())
        if not os.access(a.oxwright, os.X_OK):
            sys.exit(f"--oxwright {a.oxwright}: not an executable")
    if not a.no_score:
        a.score_bin = str(Path(a.score_bin).resolve())
        if not os.access(a.score_bin, os.X_OK):
            sys.exit(f"--score-bin {a.score_bin}: not an executable (or pass --no-score)")
    if not (a.corpus / "truth.jsonl").exists():
        sys.exit(f"--corpus {a.corpus}: no truth.jsonl (run bench/quality/prepare.py)")

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
    a.cgroup_parent = cgroup2_parent()

    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="oxwright-peers-"))
    a.work = work.resolve()
    prepare_work(a.work)
    try:
        run_all(a, peers)
    finally:
        if a.cgroup_parent:
            rmdir_retry(a.cgroup_parent)


def run_all(a, peers: dict) -> None:
    work = a.work
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
        "concurrency": a.concurrency,
        "in_flight": {n: cap for n, (_, cap) in peers.items()},
        "chromium": a.chromium,
        "chromium_flags": CHROMIUM_FLAGS,
        "cpu_source": f"cgroup v2 ({a.cgroup_parent})" if a.cgroup_parent else "getrusage(RUSAGE_CHILDREN)",
        "work": str(work),
        "versions": versions(a, peers),
    }
    print(json.dumps(meta, indent=1), flush=True)

    names = list(peers)
    runs = []
    for r in range(a.rounds):
        order = names if r % 2 == 0 else list(reversed(names))
        round_runs = {}
        for peer in order:
            out = work / f"r{r + 1}" / peer
            md = out / "md"
            md.mkdir(parents=True)
            m, errors = peers[peer][0](a, urls, out, md, server, f"r{r + 1}-{peer}")
            converted = [i for i in ids if (md / f"{i}.md").exists() and (md / f"{i}.md").read_text(errors="replace").strip()]
            conv = set(converted)
            failures = {}
            for i in ids:
                if i not in conv:
                    failures[i] = errors.get(i) or ("empty Markdown" if (md / f"{i}.md").exists() else "no Markdown")
            m.update(peer=peer, round=r + 1, in_flight=peers[peer][1], converted=len(converted),
                     failed=len(failures), failed_ids=sorted(failures), failures=failures,
                     pages_per_s=len(ids) / m["wall_s"],
                     pages_per_s_after_start=(len(ids) / (m["wall_s"] - m["startup_s"])) if m["startup_s"] else None,
                     cpu_ms_per_page=m["cpu_s"] * 1000 / len(ids),
                     other_processes_at_end=busy_processes())
            m["f1_all"] = score(a, md, ids_file, f"{peer}-r{r + 1}")
            round_runs[peer] = (m, conv, md)
            f1 = ", F1 " + ", ".join(f"{c} {v['f1']:.3f}" for c, v in m["f1_all"].items()) if m["f1_all"] else ""
            print(f"round {r + 1} {peer}: rc {m['rc']}, {m['pages_per_s']:.2f} pages/s, "
                  f"{m['cpu_ms_per_page']:.0f} CPU ms/page ({m['cpu_source']}), "
                  f"{m['peak_pss_mib']:.0f} MiB, failed {m['failed']}{f1}", flush=True)
            for i, msg in sorted(failures.items()):
                print(f"  failed {i}: {msg[:300]}", flush=True)
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
    for peer in names:
        rs = [m for m in runs if m["peer"] == peer]
        med = lambda k: statistics.median(m[k] for m in rs)
        f1 = lambda key, c: statistics.median(m[key][c]["f1"] for m in rs if c in m[key])
        corpora = sorted(rs[0]["f1_all"]) if rs[0]["f1_all"] else []
        summary[peer] = {
            "in_flight": peers[peer][1],
            "pages_per_s": med("pages_per_s"),
            "cpu_ms_per_page": med("cpu_ms_per_page"),
            "peak_pss_mib": med("peak_pss_mib"),
            "failed": [m["failed"] for m in rs],
            "startup_s": med("startup_s") if all(m["startup_s"] is not None for m in rs) else None,
            "pages_per_s_after_start": med("pages_per_s_after_start") if all(m["startup_s"] for m in rs) else None,
            "f1_all": {c: f1("f1_all", c) for c in corpora} if corpora else None,
            "f1_common": {c: f1("f1_common", c) for c in corpora} if corpora else None,
        }
    meta["loadavg_at_end"] = Path("/proc/loadavg").read_text().strip()
    result = {"machine": meta, "summary": summary, "runs": runs}
    if a.json:
        names = {str(work): "<work>", str(a.corpus): "<corpus>", str(a.cgroup_parent or ""): "<cgroup>",
                 str(Path(a.python).parent.parent) if a.python else "": "<venv>"}
        Path(a.json).write_text(publishable(json.dumps(result, indent=1) + "\n", names))
        print(f"wrote {a.json}", file=sys.stderr)
    print(table(summary))
    print(failure_list(runs))


def table(summary: dict) -> str:
    first = next(iter(summary.values()))
    corp = sorted(first["f1_all"]) if first["f1_all"] else []
    head = ("| peer | in flight | pages/s | pages/s after start-up | start-up s | CPU ms/page (tree) "
            "| peak PSS MiB (tree) | failed (per round) |"
            + "".join(f" F1 {c} (all / common) |" for c in corp))
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(corp)]
    opt = lambda v, f: format(v, f) if v is not None else "-"
    for peer, s in summary.items():
        lines.append(f"| {peer} | {s['in_flight']} | {s['pages_per_s']:.2f} | {opt(s['pages_per_s_after_start'], '.2f')} | "
                     f"{opt(s['startup_s'], '.1f')} | {s['cpu_ms_per_page']:.0f} | {s['peak_pss_mib']:.0f} | "
                     f"{' / '.join(map(str, s['failed']))} |"
                     + "".join(f" {s['f1_all'][c]:.3f} / {s['f1_common'][c]:.3f} |" for c in corp))
    if not corp:
        lines.append("\n(F1 not scored: --no-score)")
    return "\n".join(lines)


def failure_list(runs: list) -> str:
    lines = ["", "Failed pages:"]
    for m in runs:
        for i, msg in sorted(m["failures"].items()):
            lines.append(f"- {m['peer']} r{m['round']} {i}: {msg[:300]}")
    if len(lines) == 2:
        lines.append("- none")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
