"""oxwright mcp vs @playwright/mcp, driven by the same Python MCP client over
stdio, on the same fixture pages, interleaved round by round: per-action
latency (navigate, snapshot, click, fill) and snapshot size.

    bash infra/install.sh                      # Python SDK + @playwright/mcp
    cargo build --release -p oxwright
    target/release/oxwright sample-site --listen 127.0.0.1:8765 &
    infra/.venv/bin/python bench/mcp/compare.py --base http://127.0.0.1:8765 --rounds 10

Both servers run as their users start them: oxwright with its defaults
(actions return no snapshot unless asked), Playwright MCP headless,
isolated, Debian Chromium, its defaults (every action returns a snapshot).
Tokens are estimated as characters / 4.

With --real-base (a static server over saved real pages, e.g.
`python3 -m http.server 8766 --bind 127.0.0.1 -d CORPUS/pages`, CORPUS from
`bench/quality/prepare.py`) and
--real-pages, each round also navigates to and snapshots those pages: the
fixture pages are small, real pages are where a snapshot's time goes. Both
servers are then allowed only the two loopback origins (oxwright's
--allow-host, Playwright MCP's --allowed-origins), so neither waits on a
third-party host that cannot resolve offline.
"""

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import time

from mcp import Client, StdioServerParameters

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = ["/app/login", "/app/search", "/app/item?id=1", "/"]


def servers(binary, origins):
    allow = ["--allowed-origins", ";".join(origins)] if len(origins) > 1 else []
    return {
        "oxwright": StdioServerParameters(
            command=binary, args=["--allow-host", "127.0.0.1", "--browsers", "1", "mcp"], env=dict(os.environ)
        ),
        "playwright-mcp": StdioServerParameters(
            command="node",
            args=[
                os.path.join(ROOT, "infra/node/node_modules/@playwright/mcp/cli.js"),
                "--headless", "--isolated", "--no-sandbox", "--executable-path", "/usr/bin/chromium",
            ] + allow,
            env=dict(os.environ),
        ),
    }


def text(r):
    return "\n".join(c.text for c in r.content if getattr(c, "type", "") == "text")


def ref_of(snapshot, pattern):
    m = re.search(pattern + r'[^\n]*\[ref=([a-z0-9]+)\]', snapshot)
    return m.group(1) if m else None


async def timed(client, name, args):
    t0 = time.perf_counter()
    r = await client.call_tool(name, args)
    ms = (time.perf_counter() - t0) * 1000
    if r.is_error:
        raise RuntimeError(f"{name} {args}: {text(r)[:300]}")
    return ms, text(r)


async def round_on(client, base, out, real_base=None, real_pages=()):
    for page in real_pages:
        ms, _ = await timed(client, "browser_navigate", {"url": real_base + page})
        out["navigate (real pages)"].append(ms)
        ms, snap = await timed(client, "browser_snapshot", {})
        out["snapshot (real pages)"].append(ms)
        out["snapshot chars (real pages)"].append(len(snap))
    for page in PAGES:
        ms, _ = await timed(client, "browser_navigate", {"url": base + page})
        out["navigate"].append(ms)
        ms, snap = await timed(client, "browser_snapshot", {})
        out["snapshot"].append(ms)
        out[f"snapshot chars {page}"].append(len(snap))
    await timed(client, "browser_navigate", {"url": base + "/app/login"})
    _, snap = await timed(client, "browser_snapshot", {})
    user = ref_of(snap, r'textbox "Username"')
    box = ref_of(snap, r'checkbox "Remember me"')
    ms, t = await timed(client, "browser_type", {"element": "Username", "ref": user, "target": user, "text": "alice"})
    out["fill"].append(ms)
    out["fill reply chars"].append(len(t))
    ms, t = await timed(client, "browser_click", {"element": "Remember me", "ref": box, "target": box})
    out["click"].append(ms)
    out["click reply chars"].append(len(t))


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/oxwright"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--real-base", default=None, help="origin serving saved real pages")
    ap.add_argument("--real-pages", default="", help="comma-separated paths under --real-base")
    a = ap.parse_args()
    real = [p for p in a.real_pages.split(",") if p] if a.real_base else []
    keys = KEYS + (REAL_KEYS if real else [])
    origins = [a.base.rstrip("/")] + ([a.real_base.rstrip("/")] if real else [])
    srv = servers(a.binary, origins)
    results = {name: {} for name in srv}
    async with Client(srv["oxwright"]) as ox, Client(srv["playwright-mcp"]) as pw:
        clients = {"oxwright": ox, "playwright-mcp": pw}
        # One warm-up round each (browser start), not counted.
        for name, c in clients.items():
            await round_on(c, a.base, {k: [] for k in keys}, a.real_base, real)
        for i in range(a.rounds):
            order = list(clients) if i % 2 == 0 else list(reversed(list(clients)))
            for name in order:
                out = results[name].setdefault("_raw", {k: [] for k in keys})
                await round_on(clients[name], a.base, out, a.real_base, real)
    table = {}
    for name, r in results.items():
        raw = r["_raw"]
        table[name] = {k: round(statistics.median(v), 1) for k, v in raw.items()}
    print(f"{'':32} {'oxwright':>12} {'playwright-mcp':>15} {'ratio':>7}")
    for k in keys:
        o, p = table["oxwright"][k], table["playwright-mcp"][k]
        print(f"{k:32} {o:12} {p:15} {o / p if p else 0:7.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "rounds": a.rounds, "real_pages": real, "median": table}, f, indent=2)


KEYS = ["navigate", "snapshot", "fill", "click", "fill reply chars", "click reply chars"] + [
    f"snapshot chars {p}" for p in PAGES
]
REAL_KEYS = ["navigate (real pages)", "snapshot (real pages)", "snapshot chars (real pages)"]

asyncio.run(main())
