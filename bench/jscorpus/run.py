#!/usr/bin/env python3
"""Scores oxwright's render modes on the JavaScript-rendered dev corpus.

Serves a corpus built by `node build.mjs OUTDIR` on 127.0.0.1 (a free
port), runs `oxwright batch` over every page once per mode, reads each job's
result.json and reports, per mode: pages ok / failed, pages whose Markdown
holds every expected snippet ("complete"), pages that came back partial,
without any expected text, or empty, wall time and pages/s; for `auto`,
the decision (`rendered`) against the truth's `served_sufficient`, with the
`render_reason` of every wrong decision.

    python3 bench/jscorpus/run.py --corpus CORPUS \\
        --oxwright target/release/oxwright [--modes auto,always] \\
        [--config oxwright.toml] [--json results.json]

`--score-only WORKDIR` scores the results of an earlier run (WORKDIR/<mode>)
without serving or running anything. Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import functools
import html
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

MODES = ("auto", "always", "never")

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".css": "text/css; charset=utf-8",
    ".gif": "image/gif",
    ".ico": "image/x-icon",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
}


# --------------------------------------------------------------------- server


class CorpusHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the corpus directory with explicit content types, no caching."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **CONTENT_TYPES, "": "application/octet-stream"}
    protocol_version = "HTTP/1.1"

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        self.server.count(self.path)  # type: ignore[attr-defined]


class CorpusServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, directory: Path, host: str = "127.0.0.1", port: int = 0):
        handler = functools.partial(CorpusHandler, directory=str(directory))
        super().__init__((host, port), handler)
        self._lock = threading.Lock()
        self.requests: dict[str, int] = {}

    def count(self, path: str) -> None:
        """Counts a request by what it asked for: page, script, api, other."""
        raw = urllib.parse.urlsplit(path).path
        ext = os.path.splitext(raw)[1].lower()
        if raw.startswith("/api/"):
            kind = "api"
        elif ext in (".js", ".mjs"):
            kind = "script"
        elif ext in (".html", "") or raw.endswith("/"):
            kind = "page"
        else:
            kind = "other"
        with self._lock:
            self.requests[kind] = self.requests.get(kind, 0) + 1

    def take_counts(self) -> dict[str, int]:
        with self._lock:
            counts, self.requests = self.requests, {}
        return counts


def start_server(corpus: Path, host: str, port: int) -> CorpusServer:
    server = CorpusServer(corpus, host, port)
    thread = threading.Thread(target=server.serve_forever, name="corpus-server", daemon=True)
    thread.start()
    return server


# --------------------------------------------------------------------- truth and matching


def load_truth(corpus: Path) -> list[dict]:
    path = corpus / "truth.jsonl"
    if not path.is_file():
        sys.exit(f"error: {path} not found: build the corpus first (node build.mjs {corpus})")
    pages = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for p in pages:
        for key in ("id", "path", "expected", "served_sufficient"):
            if key not in p:
                sys.exit(f"error: truth line {p.get('id', '?')} has no {key!r}")
    return pages


_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~<\"'&$%:;,=?@^])")


def norm(text: str) -> str:
    """Text as compared: Markdown escapes and emphasis marks dropped,
    entities decoded, quotes straightened, whitespace collapsed, case folded."""
    text = _ESCAPED.sub(r"\1", text)
    text = html.unescape(text)
    text = text.replace("\u00a0", " ").replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = re.sub(r"[*_`]+", "", text)
    return re.sub(r"\s+", " ", text).strip().casefold()


def url_path(url: str) -> str:
    return urllib.parse.urlsplit(url).path or "/"


# --------------------------------------------------------------------- oxwright


def run_batch(oxwright: str, mode: str, urls: Path, out: Path, host_rule: str | None, config: str | None,
              global_args: list[str], fetch_args: list[str], timeout_s: float, log: Path) -> dict:
    """Runs one `oxwright batch`; returns what happened (exit code, wall time, summary)."""
    cmd = [oxwright, "--out", str(out)]
    if host_rule:
        cmd += ["--allow-host", host_rule]
    if config:
        cmd += ["--config", config]
    cmd += global_args
    cmd += ["batch", str(urls), "--render", mode, "--json"]
    cmd += fetch_args
    print(f"[{mode}] {' '.join(cmd)}", file=sys.stderr, flush=True)
    started = time.monotonic()
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            stdout, _ = proc.communicate(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            # SIGINT first: the batch then writes its manifest and exits (130).
            os.killpg(proc.pid, signal.SIGINT)
            try:
                stdout, _ = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                stdout, _ = proc.communicate()
            timed_out = True
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    wall = time.monotonic() - started
    summary = None
    text = stdout.decode("utf-8", "replace")
    start = text.find("{")
    if start >= 0:
        try:
            summary = json.loads(text[start:])
        except json.JSONDecodeError:
            summary = None
    return {
        "command": cmd,
        "exit_code": proc.returncode,
        "timed_out": timed_out,
        "wall_s": wall,
        "summary": summary,
        "stderr_tail": log.read_text(encoding="utf-8", errors="replace")[-2000:],
    }


# --------------------------------------------------------------------- results


def find_manifest(out: Path, summary: dict | None) -> Path | None:
    if summary and summary.get("manifest"):
        path = out / summary["manifest"]
        if path.is_file():
            return path
    found = sorted((out / "batches").glob("*/manifest.jsonl"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def read_results(out: Path, summary: dict | None) -> tuple[dict[str, dict], str]:
    """Reads a batch's outcome per URL path: status, error, result.json.

    From the manifest when there is one (its artefact keys name result.json;
    jobs/fetch/<job-id>/result.json otherwise); without a manifest, from every
    jobs/fetch/*/result.json under `out`, by its `url`."""
    by_path: dict[str, dict] = {}
    manifest = find_manifest(out, summary)
    if manifest is not None:
        for line in manifest.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                report = json.loads(line)
            except json.JSONDecodeError:
                continue
            entry = {
                "status": report.get("status"),
                "error": report.get("error"),
                "job_id": report.get("job_id"),
                "duration_ms": report.get("duration_ms"),
                "result": None,
            }
            keys = [k for k in report.get("artifacts") or [] if k.endswith("/result.json")]
            if not keys and report.get("job_id"):
                keys = [f"jobs/fetch/{report['job_id']}/result.json"]
            for key in keys:
                path = out / key
                if path.is_file():
                    try:
                        entry["result"] = json.loads(path.read_text(encoding="utf-8"))
                    except (OSError, json.JSONDecodeError) as exc:
                        entry["read_error"] = f"{key}: {exc}"
                    break
            if entry["status"] == "ok" and entry["result"] is None and "read_error" not in entry:
                entry["read_error"] = f"no result.json for job {report.get('job_id')}"
            by_path[url_path(report.get("url", ""))] = entry
        return by_path, str(manifest)
    for path in sorted((out / "jobs" / "fetch").glob("*/result.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        by_path[url_path(result.get("url", ""))] = {"status": "ok", "error": None, "job_id": path.parent.name, "result": result}
    return by_path, "(no manifest: read jobs/fetch/*/result.json)"


def score_mode(mode: str, truth: list[dict], by_path: dict[str, dict]) -> dict:
    pages = []
    for t in truth:
        entry = by_path.get(t["path"])
        row = {
            "id": t["id"],
            "group": t.get("group"),
            "kind": t.get("kind"),
            "served_sufficient": t["served_sufficient"],
            "status": "missing" if entry is None else entry.get("status") or "?",
        }
        if entry and entry.get("error"):
            err = entry["error"]
            row["error"] = f"{err.get('kind', '?')}: {err.get('message', '')}"[:300] if isinstance(err, dict) else str(err)[:300]
        if entry and entry.get("read_error"):
            row["read_error"] = entry["read_error"]
        result = (entry or {}).get("result")
        if row["status"] == "ok" and result is not None:
            markdown = result.get("markdown") or ""
            text = norm(markdown)
            found = [norm(s) in text for s in t["expected"]]
            row.update(
                found=sum(found),
                expected=len(found),
                missing=[s for s, f in zip(t["expected"], found) if not f],
                markdown_words=len(markdown.split()),
                rendered=result.get("rendered"),
                render_reason=result.get("render_reason"),
                final_url=result.get("final_url"),
                total_ms=(result.get("timings") or {}).get("total_ms"),
                warnings=result.get("warnings") or [],
            )
            if not markdown.strip():
                row["outcome"] = "empty"
            elif all(found):
                row["outcome"] = "complete"
            elif any(found):
                row["outcome"] = "partial"
            else:
                row["outcome"] = "none"
        elif row["status"] == "ok":
            row["outcome"] = "unreadable"  # ok in the manifest, but no result.json to read
        else:
            row["outcome"] = "failed" if row["status"] == "failed" else "missing"
        pages.append(row)

    ok = [p for p in pages if p["status"] == "ok" and "found" in p]
    counts = {k: sum(1 for p in pages if p["outcome"] == k) for k in ("complete", "partial", "none", "empty", "failed", "missing", "unreadable")}
    report = {
        "mode": mode,
        "pages": len(pages),
        "ok": len(ok),
        "failed": sum(1 for p in pages if p["status"] == "failed"),
        "missing": sum(1 for p in pages if p["status"] == "missing"),
        "outcomes": counts,
        "rendered": sum(1 for p in ok if p.get("rendered") is True),
        "by_group": {},
        "page_results": pages,
    }
    for p in pages:
        g = report["by_group"].setdefault(p["group"] or "?", {"pages": 0, "complete": 0, "rendered": 0, "served_sufficient": 0})
        g["pages"] += 1
        g["complete"] += p["outcome"] == "complete"
        g["rendered"] += p.get("rendered") is True
        g["served_sufficient"] += bool(p["served_sufficient"])
    # The decision table: for auto, and for any mode whose results mix read and rendered pages.
    if mode == "auto" or (any(p.get("rendered") is False for p in ok) and any(p.get("rendered") for p in ok)):
        report["decision"] = confusion(ok)
    return report


def confusion(ok: list[dict]) -> dict:
    """The render decision against served_sufficient, over pages that came back."""
    decided = [p for p in ok if isinstance(p.get("rendered"), bool)]
    cells = {
        "read_when_sufficient": [p for p in decided if not p["rendered"] and p["served_sufficient"]],
        "rendered_when_needed": [p for p in decided if p["rendered"] and not p["served_sufficient"]],
        "read_when_needed": [p for p in decided if not p["rendered"] and not p["served_sufficient"]],
        "rendered_when_sufficient": [p for p in decided if p["rendered"] and p["served_sufficient"]],
    }
    n = {k: len(v) for k, v in cells.items()}
    sufficient = n["read_when_sufficient"] + n["rendered_when_sufficient"]
    needed = n["rendered_when_needed"] + n["read_when_needed"]

    def ratio(a: int, b: int) -> float | None:
        return round(a / b, 4) if b else None

    return {
        **n,
        "decided": len(decided),
        "accuracy": ratio(n["read_when_sufficient"] + n["rendered_when_needed"], len(decided)),
        # Of the pages that need a browser, the share that got one (a miss loses content).
        "needed_rendered_rate": ratio(n["rendered_when_needed"], needed),
        # Of the pages whose served HTML holds them, the share read without a browser.
        "sufficient_read_rate": ratio(n["read_when_sufficient"], sufficient),
        "wrong": [
            {
                "id": p["id"],
                "kind": p["kind"],
                "error": "miss (read, content needed a browser)" if not p["rendered"] else "waste (rendered, served HTML was enough)",
                "render_reason": p.get("render_reason"),
                "outcome": p["outcome"],
            }
            for p in cells["read_when_needed"] + cells["rendered_when_sufficient"]
        ],
    }


# --------------------------------------------------------------------- report


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "—"


def markdown_report(reports: list[dict], truth: list[dict]) -> str:
    lines = []
    total = len(truth)
    suff = sum(1 for t in truth if t["served_sufficient"])
    lines.append(f"Corpus: {total} pages, {suff} whose served HTML holds them, {total - suff} that need scripts.\n")
    lines.append("| mode | ok | failed | complete | partial | no expected text | empty | rendered | wall s | pages/s | requests (page/script/api) |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in reports:
        o = r["outcomes"]
        run = r.get("run") or {}
        wall = run.get("wall_s")
        req = run.get("requests") or {}
        wall_s = f"{wall:.1f}" if wall is not None else "—"
        rate = f"{r['pages'] / wall:.2f}" if wall else "—"
        requests = f"{req.get('page', 0)}/{req.get('script', 0)}/{req.get('api', 0)}" if req else "—"
        failed = r["failed"] + r["missing"] + o["unreadable"]
        lines.append(
            f"| {r['mode']} | {r['ok']} | {failed} | {o['complete']} ({pct(o['complete'], r['pages'])}) | {o['partial']} | {o['none']} | {o['empty']} "
            f"| {r['rendered']} | {wall_s} | {rate} | {requests} |"
        )
    groups = sorted({t.get("group", "?") for t in truth})
    lines.append("\nComplete pages by group (a client-only apps, b fetched JSON, c server-rendered, d noscript walls, e static with scripts, f tricky):\n")
    lines.append("| group | pages | served sufficient | " + " | ".join(f"{r['mode']} complete" + (" / rendered" if r.get("decision") else "") for r in reports) + " |")
    lines.append("|---|---|---|" + "---|" * len(reports))
    for g in groups:
        first = reports[0]["by_group"].get(g, {}) if reports else {}
        cells = []
        for r in reports:
            row = r["by_group"].get(g, {})
            cells.append(f"{row.get('complete', 0)}" + (f" / {row.get('rendered', 0)}" if r.get("decision") else ""))
        n = first.get("pages", sum(1 for t in truth if t.get("group") == g))
        s = first.get("served_sufficient", sum(1 for t in truth if t.get("group") == g and t["served_sufficient"]))
        lines.append(f"| {g} | {n} | {s} | " + " | ".join(cells) + " |")
    for r in reports:
        d = r.get("decision")
        if not d:
            continue
        lines.append(f"\nDecision of `{r['mode']}` against the truth ({d['decided']} pages that came back):\n")
        lines.append("| | read | rendered |")
        lines.append("|---|---|---|")
        lines.append(f"| served HTML sufficient | {d['read_when_sufficient']} (right) | {d['rendered_when_sufficient']} (wasted) |")
        lines.append(f"| scripts needed | {d['read_when_needed']} (miss: content lost) | {d['rendered_when_needed']} (right) |")

        def show(x):
            return f"{100 * x:.0f}%" if x is not None else "—"

        lines.append(
            f"\naccuracy {show(d['accuracy'])}; pages needing scripts that were rendered {show(d['needed_rendered_rate'])}; "
            f"pages whose served HTML sufficed that were read {show(d['sufficient_read_rate'])}"
        )
        if d["wrong"]:
            lines.append("\n| page | kind | wrong decision | outcome | render_reason |")
            lines.append("|---|---|---|---|---|")
            for w in d["wrong"]:
                reason = (w["render_reason"] or "").replace("|", "\\|")
                lines.append(f"| {w['id']} | {w['kind']} | {w['error']} | {w['outcome']} | {reason} |")
    for r in reports:
        bad = [p for p in r["page_results"] if p["outcome"] != "complete"]
        if not bad:
            continue
        lines.append(f"\nPages not complete under `{r['mode']}`:\n")
        lines.append("| page | kind | outcome | found | rendered | detail |")
        lines.append("|---|---|---|---|---|---|")
        for p in bad:
            detail = p.get("error") or p.get("read_error") or (f"missing: {p['missing'][0][:80]}" if p.get("missing") else "")
            found = f"{p['found']}/{p['expected']}" if "found" in p else "—"
            rendered = {True: "yes", False: "no"}.get(p.get("rendered"), "—")
            detail = detail.replace("|", "\\|")
            lines.append(f"| {p['id']} | {p['kind']} | {p['outcome']} | {found} | {rendered} | {detail} |")
    if len(reports) >= 2:
        by_mode = {r["mode"]: {p["id"]: p for p in r["page_results"]} for r in reports}
        if "auto" in by_mode and "always" in by_mode:
            lost = [i for i, p in by_mode["always"].items() if p["outcome"] == "complete" and by_mode["auto"].get(i, {}).get("outcome") != "complete"]
            gained = [i for i, p in by_mode["auto"].items() if p["outcome"] == "complete" and by_mode["always"].get(i, {}).get("outcome") != "complete"]
            lines.append(f"\nauto against always: {len(lost)} page(s) complete only under always{': ' + ', '.join(lost) if lost else ''}; "
                         f"{len(gained)} complete only under auto{': ' + ', '.join(gained) if gained else ''}.")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------- main


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, type=Path, help="the directory `node build.mjs` wrote (holds truth.jsonl)")
    ap.add_argument("--oxwright", default="target/release/oxwright", help="the oxwright binary (default target/release/oxwright)")
    ap.add_argument("--modes", default="auto,always", help="comma-separated render modes to run (auto, always, never; default auto,always)")
    ap.add_argument("--config", help="passed to oxwright as --config")
    ap.add_argument("--workdir", type=Path, help="where each mode's --out goes (WORKDIR/<mode>; default a new temporary directory, kept)")
    ap.add_argument("--json", type=Path, help="write every number and per-page result to this file")
    ap.add_argument("--host", default="127.0.0.1", help="address to serve the corpus on (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=0, help="port to serve on (default a free one)")
    ap.add_argument("--timeout-s", type=float, default=1800, help="give up on one batch after this long (default 1800)")
    ap.add_argument("--global-arg", action="append", default=[], metavar="ARG",
                    help="extra global oxwright flag, before the subcommand (repeatable; e.g. --global-arg=--browsers --global-arg=2)")
    ap.add_argument("--fetch-arg", action="append", default=[], metavar="ARG",
                    help="extra `batch` flag, after the subcommand (repeatable; e.g. --fetch-arg=--content --fetch-arg=full)")
    ap.add_argument("--score-only", type=Path, metavar="WORKDIR",
                    help="score the results of an earlier run under WORKDIR/<mode>; serve and run nothing")
    ap.add_argument("--serve-only", action="store_true", help="serve the corpus and print its URL list until interrupted")
    args = ap.parse_args(argv)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in args.modes:
        if m not in MODES:
            ap.error(f"unknown mode {m!r} (one of {', '.join(MODES)})")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    corpus = args.corpus.resolve()
    truth = load_truth(corpus)
    reports: list[dict] = []

    if args.score_only:
        workdir = args.score_only.resolve()
        for mode in args.modes:
            out = workdir / mode
            if not out.is_dir():
                print(f"[{mode}] {out} not found: skipped", file=sys.stderr)
                continue
            by_path, source = read_results(out, None)
            report = score_mode(mode, truth, by_path)
            report["run"] = {"out": str(out), "results_from": source}
            saved = out / "run.json"
            if saved.is_file():
                try:
                    report["run"].update(json.loads(saved.read_text(encoding="utf-8")))
                except json.JSONDecodeError:
                    pass
            reports.append(report)
    else:
        oxwright = args.oxwright
        if not args.serve_only:
            resolved = shutil.which(oxwright) if os.sep not in oxwright else (oxwright if os.access(oxwright, os.X_OK) else None)
            if not resolved:
                sys.exit(f"error: oxwright binary {oxwright!r} not found or not executable (build it with cargo build --release -p oxwright)")
            oxwright = os.path.abspath(resolved)
        server = start_server(corpus, args.host, args.port)
        host, port = server.server_address[:2]
        base = f"http://{host}:{port}"
        workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="oxwright-jscorpus-run-"))).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        urls = workdir / "urls.txt"
        urls.write_text("".join(f"{base}{t['path']}\n" for t in truth), encoding="utf-8")
        print(f"serving {corpus} at {base}/ ({len(truth)} pages); URL list {urls}", file=sys.stderr, flush=True)
        try:
            if args.serve_only:
                print(urls.read_text(encoding="utf-8"), end="")
                try:
                    while True:
                        time.sleep(3600)
                except KeyboardInterrupt:
                    return 0
            host_rule = f"{host}:{port}"
            for mode in args.modes:
                out = workdir / mode
                if out.exists() and any(out.iterdir()):
                    sys.exit(f"error: {out} is not empty; give another --workdir or remove it")
                out.mkdir(parents=True, exist_ok=True)
                server.take_counts()
                run = run_batch(oxwright, mode, urls, out, host_rule, args.config, args.global_arg, args.fetch_arg,
                                args.timeout_s, workdir / f"{mode}.stderr.log")
                run["requests"] = server.take_counts()
                run["out"] = str(out)
                (out / "run.json").write_text(json.dumps({k: v for k, v in run.items() if k != "stderr_tail"}, indent=2), encoding="utf-8")
                if run["exit_code"] not in (0, 1):
                    print(f"[{mode}] oxwright exited {run['exit_code']}{' (timed out)' if run['timed_out'] else ''}; "
                          f"stderr ends:\n{run['stderr_tail'][-800:]}", file=sys.stderr)
                by_path, source = read_results(out, run["summary"])
                report = score_mode(mode, truth, by_path)
                run["results_from"] = source
                report["run"] = run
                reports.append(report)
                print(f"[{mode}] {report['ok']} ok, {report['failed']} failed, {report['outcomes']['complete']} complete "
                      f"in {run['wall_s']:.1f} s", file=sys.stderr, flush=True)
        finally:
            server.shutdown()
            server.server_close()
        print(f"results under {workdir}", file=sys.stderr)

    text = markdown_report(reports, truth)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        # Results are committed: the run's own directories are named, not shown.
        text = json.dumps({"corpus": str(corpus), "pages": len(truth), "modes": reports}, indent=2)
        repo = Path(__file__).resolve().parent.parent.parent
        for path, name in ((str(corpus), "<corpus>"), (str(workdir), "<work>"), (str(repo) + "/", "")):
            text = text.replace(json.dumps(path)[1:-1], name)
        args.json.write_text(text, encoding="utf-8")
    failed_to_run = any((r.get("run") or {}).get("exit_code") not in (0, 1, None) for r in reports)
    return 1 if failed_to_run or not reports else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
