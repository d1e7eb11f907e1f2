#!/usr/bin/env python3
"""Lambda-path cold start and warm per-job time beside `oxwright worker`.

Lambda: `oxwright-lambda` against a fake Runtime API (this script), direct
invocations of fetch jobs for the sample site's articles, one at a time.
  cold  = process spawn (the Lambda init) -> first result; also first
          invocation handed out -> its result (Chromium starts inside it)
  warm  = median invocation -> result over the next N jobs
Worker: `oxwright worker` (1 browser, 1 page) on RabbitMQ with a file store.
  cold  = process spawn -> result.json of a job queued before it started
  warm  = (last - first result.json) / (N - 1) for N queued jobs

Usage (services up: `bash infra/services.sh start`):
  cargo build -p oxwright -p oxwright-lambda
  python3 bench/lambda/bench.py [--jobs 20] [--bin target/debug]
"""
import argparse, json, os, signal, statistics, subprocess, sys, tempfile, threading, time, uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import queue as q


def job(url):
    return {"schema_version": 1, "id": str(uuid.uuid4()), "kind": "fetch", "spec": {"url": url},
            "attempt": 1, "created_at": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")}


class Runtime:
    """The fake Runtime API: /next hands out queued events, answers are timed."""

    def __init__(self):
        self.events, self.answers = q.Queue(), q.Queue()
        rt = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, code, body=b"", headers=()):
                self.send_response(code)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path.endswith("/invocation/next"):
                    rid, ev = rt.events.get()
                    rt.handed[rid] = time.monotonic()
                    deadline = str(int(time.time() * 1000) + 120_000)
                    self.reply(200, json.dumps(ev).encode(), [("lambda-runtime-aws-request-id", rid),
                               ("lambda-runtime-deadline-ms", deadline),
                               ("lambda-runtime-invoked-function-arn", "arn:aws:lambda:eu-west-1:1:function:bench")])
                else:  # extension event/next: never answers
                    threading.Event().wait()

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if "/extension/register" in self.path:
                    self.reply(200, b'{"functionName":"bench","functionVersion":"1","handler":"bootstrap"}',
                               [("lambda-extension-identifier", "ext")])
                    return
                rid = self.path.split("/")[-2]
                rt.answers.put((rid, self.path.endswith("/response"), json.loads(body or b"null"), time.monotonic()))
                self.reply(202)

        self.handed = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.addr = f"127.0.0.1:{self.server.server_address[1]}"

    def invoke(self, rid, event):
        self.events.put((rid, event))
        got, ok, body, at = self.answers.get(timeout=120)
        assert got == rid and ok, body
        return body, at


def lambda_run(args, urls, site):
    rt = Runtime()
    tmp, out = tempfile.mkdtemp(prefix="oxb"), tempfile.mkdtemp()
    env = dict(os.environ, AWS_LAMBDA_RUNTIME_API=rt.addr, AWS_LAMBDA_FUNCTION_NAME="bench",
               AWS_LAMBDA_FUNCTION_MEMORY_SIZE="2048", AWS_LAMBDA_FUNCTION_VERSION="1", OXWRIGHT_OUT=out,
               OXWRIGHT_ALLOW_HOSTS=site, TMPDIR=tmp, OXWRIGHT_BROWSER__PAGES_PER_BROWSER="1",
               OXWRIGHT_BROWSER__MAX_PAGES_PER_BROWSER="1", RUST_LOG="warn,chromiumoxide=error")
    env.pop("OXWRIGHT_AMQP_URL", None)
    spawned = time.monotonic()
    proc = subprocess.Popen([os.path.join(args.bin, "oxwright-lambda")], env=env)
    body, at = rt.invoke("r0", job(urls[0]))
    assert body["report"]["status"] == "ok", body
    cold_spawn, cold_invoke = at - spawned, at - rt.handed["r0"]
    warm = []
    for i, url in enumerate(urls[1:args.jobs + 1], 1):
        body, at = rt.invoke(f"r{i}", job(url))
        assert body["report"]["status"] == "ok" and body["browsers_launched"] == 1, body
        warm.append(at - rt.handed[f"r{i}"])
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    return {"cold_spawn_to_result_s": cold_spawn, "cold_invocation_to_result_s": cold_invoke,
            "warm_median_s": statistics.median(warm), "warm_p90_s": sorted(warm)[int(len(warm) * 0.9) - 1],
            "jobs": len(warm)}


def result_times(out, n, limit=180):
    seen, end = {}, time.monotonic() + limit
    while len(seen) < n and time.monotonic() < end:
        for root, _, files in os.walk(os.path.join(out, "jobs")):
            if "result.json" in files and root not in seen:
                seen[root] = time.monotonic()
        time.sleep(0.005)
    assert len(seen) == n, f"{len(seen)}/{n} results"
    return sorted(seen.values())


def worker_run(args, urls, site):
    out = tempfile.mkdtemp()
    prefix = f"oxb-{uuid.uuid4().hex[:8]}"
    ox = os.path.join(args.bin, "oxwright")
    common = ["--amqp", args.amqp, "--queue-prefix", prefix, "--out", out, "--allow-host", site]
    sub = lambda us: subprocess.run([ox, "submit", *common, "fetch", *us], check=True, capture_output=True)
    worker = [ox, "worker", *common, "--kinds", "fetch", "--browsers", "1", "--pages-per-browser", "1",
              "--max-pages-per-browser", "1"]
    sub(urls[:1])
    spawned = time.monotonic()
    proc = subprocess.Popen(worker, env=dict(os.environ, RUST_LOG="warn,chromiumoxide=error"))
    cold = result_times(out, 1)[0] - spawned
    sub(urls[1:args.jobs + 1])
    times = result_times(out, args.jobs + 1)[1:]
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    return {"cold_spawn_to_result_s": cold, "warm_per_job_s": (times[-1] - times[0]) / (len(times) - 1),
            "jobs": len(times)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--bin", default="target/debug")
    ap.add_argument("--amqp", default=os.environ.get("OXWRIGHT_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f"))
    ap.add_argument("--port", type=int, default=0, help="sample-site port (default: a free one)")
    args = ap.parse_args()
    if not args.port:
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            args.port = s.getsockname()[1]
    site = f"127.0.0.1:{args.port}"
    urls_file = tempfile.mktemp()
    srv = subprocess.Popen([os.path.join(args.bin, "oxwright"), "sample-site", "--listen", site, "--write-urls", urls_file])
    for _ in range(200):
        if os.path.exists(urls_file) and os.path.getsize(urls_file):
            break
        time.sleep(0.05)
    if srv.poll() is not None:
        sys.exit(f"sample-site did not start on {site}")
    urls = [u.strip() for u in open(urls_file) if u.strip()]
    urls = (urls * (args.jobs // max(len(urls), 1) + 2))[: args.jobs + 1]
    try:
        res = {"lambda": lambda_run(args, urls, site), "worker": worker_run(args, urls, site)}
    finally:
        srv.terminate()
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    sys.exit(main())
