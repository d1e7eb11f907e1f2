"""Drives `oxwright mcp --storage-state FILE` with the official Python MCP
SDK: the first navigation opens the members' page signed in (greeting and
theme from the saved state), and the session cookie's value is in no
result. Run by cli/tests/mcp_server.rs:

    python login_state.py BINARY BASE_URL COOKIE_VALUE   (server args in OXWRIGHT_MCP_ARGS)
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters


def fail(what, detail=""):
    print(f"FAILED: {what}\n{detail}", file=sys.stderr)
    sys.exit(1)


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    binary, base, cookie = sys.argv[1:4]
    args = json.loads(os.environ["OXWRIGHT_MCP_ARGS"])
    results = []
    params = StdioServerParameters(command=binary, args=args, env=dict(os.environ))
    async with Client(params) as c:
        for name, a in [
            ("browser_navigate", {"url": base + "/members/home"}),
            ("browser_snapshot", {}),
            ("browser_network_requests", {}),
        ]:
            r = await c.call_tool(name, a)
            t = text(r)
            if r.is_error:
                fail(f"{name} failed", t)
            results.append((name, t))
    snapshot = results[1][1]
    for want in ["Welcome back, ada", "Theme: dark"]:
        if want not in snapshot:
            fail(f"{want!r} in the snapshot: the tab did not start signed in", snapshot)
    for name, t in results:
        if cookie in t:
            fail(f"the session cookie's value in the result of {name}", t)
    print("mcp login state: checks ok")


asyncio.run(main())
