"""Drives `oxwright mcp` with the official Python MCP SDK through every tool
and every error case, against the fixture site. Run by cli/tests/mcp_server.rs:

    python drive.py stdio BINARY BASE_URL WORKDIR
    python drive.py http  MCP_URL BASE_URL WORKDIR TOKEN

Exits non-zero on the first failed check, naming it.
"""

import asyncio
import base64
import json
import os
import re
import socket
import sys

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

PASSWORD = "Tr0ub4dor&3-horse"
CHECKS = 0


def check(cond, what, detail=""):
    global CHECKS
    if not cond:
        print(f"FAILED: {what}\n{detail}", file=sys.stderr)
        sys.exit(1)
    CHECKS += 1


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def call(client, name, args=None, error=False):
    r = await client.call_tool(name, args or {})
    t = text(r)
    check(bool(r.is_error) == error, f"{name} {args} is_error={error}", t)
    return r, t


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def find_ref(snapshot, pattern):
    m = re.search(pattern + r'[^\n]*\[ref=(e\d+)\]', snapshot)
    check(m is not None, f"a ref for {pattern}", snapshot)
    return m.group(1)


async def every_tool(c, base, workdir):
    tools = (await c.list_tools()).tools
    names = {t.name for t in tools}
    for n in [
        "browser_navigate", "browser_navigate_back", "browser_snapshot", "browser_click", "browser_type",
        "browser_fill_form", "browser_select_option", "browser_hover", "browser_press_key", "browser_wait_for",
        "browser_evaluate", "browser_take_screenshot", "browser_console_messages", "browser_network_requests",
        "browser_handle_dialog", "browser_file_upload", "browser_tabs", "browser_resize", "browser_close",
        "playwright_navigate", "playwright_screenshot", "playwright_click", "playwright_fill", "playwright_select",
        "playwright_hover", "playwright_evaluate", "playwright_get_content", "playwright_get_console_logs",
        "fetch_markdown", "load_sitemap", "crawl", "run_workflow", "browser_find", "browser_drag", "browser_network_request",
    ]:
        check(n in names, f"tool {n} listed", sorted(names))
    for t in tools:
        check(t.input_schema.get("type") == "object", f"{t.name} schema is an object", t.input_schema)
        # One type per field, as model providers take them (no ["string", "null"]).
        for k, v in t.input_schema.get("properties", {}).items():
            check(not isinstance(v.get("type"), list), f"{t.name}.{k} has one type", v)
        check(bool(t.description), f"{t.name} has a description")

    # Navigate: no snapshot unless asked.
    _, t = await call(c, "browser_navigate", {"url": base + "/app/login"})
    check("Page URL: " + base + "/app/login" in t and "Page snapshot" not in t, "navigate without snapshot", t)
    _, t = await call(c, "browser_navigate", {"url": base + "/app/login", "snapshot": True})
    check('textbox "Username"' in t, "navigate with snapshot: true", t)

    # Snapshot refs, typing (a secret by name), clicking.
    _, snap = await call(c, "browser_snapshot")
    user = find_ref(snap, r'textbox "Username"')
    await call(c, "browser_type", {"element": "Username", "target": user, "text": "alice"})
    _, t = await call(c, "browser_type", {"element": "Password", "ref": "#pass", "text": "{{APP_PASSWORD}}"})
    _, t = await call(c, "browser_evaluate", {"function": "() => document.getElementById('pass').value"})
    check(PASSWORD not in t and "{{APP_PASSWORD}}" in t, "a secret's value is redacted from results", t)
    _, t = await call(c, "browser_snapshot")
    check(PASSWORD not in t, "the password is not in a snapshot", t)
    _, t = await call(c, "browser_click", {"element": "Sign in", "target": 'role=button[name="Sign in"]'})
    check("/app/search" in t and "navigated" in t, "click signs in and navigates", t)

    # A ref of the old page is stale: a typed error, never a click elsewhere.
    _, t = await call(c, "browser_click", {"target": user}, error=True)
    check("take a new snapshot" in t, "stale ref error says to snapshot", t)

    # Diff mode returns only what changed.
    await call(c, "browser_snapshot")
    await call(c, "browser_type", {"target": "#q", "text": "rust", "submit": True})
    _, t = await call(c, "browser_snapshot", {"diff": True})
    check("Snapshot diff" in t and '+ ' in t and "Rust in Action" in t and "Sign in" not in t, "snapshot diff", t)
    _, t = await call(c, "browser_snapshot", {"diff": True})
    check("No change" in t, "an unchanged page diffs empty", t)
    _, t = await call(c, "browser_snapshot", {"maxChars": 600})
    check(len(t) < 1200, "maxChars caps the snapshot", t)

    # No element, two elements.
    _, t = await call(c, "browser_click", {"target": "#nope"}, error=True)
    check("no element matches" in t and "browser_snapshot" in t, "not found error", t)
    _, t = await call(c, "browser_click", {"target": "li"}, error=True)
    check("matches 3 elements" in t, "not unique error", t)

    # Select, hover, press, navigate back, fill_form.
    await call(c, "browser_navigate", {"url": base + "/app/item?id=1"})
    await call(c, "browser_select_option", {"element": "country", "target": "#country", "values": ["Japan"]})
    _, t = await call(c, "browser_evaluate", {"function": "() => document.getElementById('ship').textContent"})
    check("Ships to Japan" in t, "select_option selects", t)
    await call(c, "browser_hover", {"target": '[data-testid="add-main"]', "ref": '[data-testid="add-main"]'})
    await call(c, "browser_click", {"target": "testid=add-main"})
    _, t = await call(c, "browser_press_key", {"key": "Escape"})
    _, t = await call(c, "browser_evaluate", {"function": "() => document.getElementById('added').open"})
    check("false" in t, "Escape closed the modal", t)
    _, t = await call(c, "browser_navigate_back")
    check("/app/search" in t, "navigate_back", t)
    await call(c, "browser_navigate", {"url": base + "/app/login"})
    _, t = await call(c, "browser_fill_form", {"fields": [
        {"name": "Username", "type": "textbox", "ref": "#user", "value": "bob"},
        {"name": "Remember me", "type": "checkbox", "ref": "#remember", "value": "true"},
    ]})
    check("Filled 2 field(s)" in t, "fill_form", t)
    _, t = await call(c, "browser_evaluate", {"function": "() => [document.getElementById('user').value, document.getElementById('remember').checked]"})
    check('"bob"' in t and "true" in t, "fill_form filled", t)

    # Waits.
    await call(c, "browser_navigate", {"url": base + "/app/late"})
    _, t = await call(c, "browser_wait_for", {"text": "Report ready"})
    check("appeared" in t, "wait_for text", t)
    await call(c, "browser_wait_for", {"textGone": "Preparing the report", "time": 0.05})
    await call(c, "browser_wait_for", {}, error=True)

    # Screenshots: under the directory, named safely, returned as images.
    r, t = await call(c, "browser_take_screenshot", {"filename": "../../escape.png", "fullPage": True})
    images = [x for x in r.content if getattr(x, "type", "") == "image"]
    check(len(images) == 1 and base64.b64decode(images[0].data)[:4] == b"\x89PNG", "screenshot image", t)
    shots = os.path.join(workdir, "shots")
    check(os.path.isfile(os.path.join(shots, "escape.png")), "screenshot saved inside the directory", os.listdir(shots))
    check(not os.path.exists(os.path.join(workdir, "escape.png")), "no screenshot outside the directory")
    await call(c, "browser_take_screenshot", {"target": "h1"})
    await call(c, "browser_take_screenshot", {"type": "jpeg"}, error=True)

    # Console, network.
    await call(c, "browser_navigate", {"url": base + "/js-error"})
    _, t = await call(c, "browser_console_messages", {"onlyErrors": True})
    check("pageerror" in t or "error" in t, "console errors", t)
    _, t = await call(c, "browser_network_requests")
    check(base + "/js-error" in t and "[document]" in t, "network requests", t)
    # Playwright MCP's parameters: a level, a URL filter, static resources.
    await call(c, "browser_evaluate", {"function": "() => { console.log('plain note'); console.warn('careful note'); console.debug('debug note'); return 1; }"})
    _, t = await call(c, "browser_console_messages", {"level": "error"})
    check("script failed" in t and "careful note" not in t and "plain note" not in t, "console at level error", t)
    _, t = await call(c, "browser_console_messages", {"level": "warning"})
    check("careful note" in t and "plain note" not in t, "console at level warning", t)
    _, t = await call(c, "browser_console_messages", {"level": "info"})
    check("plain note" in t and "debug note" not in t, "console at level info", t)
    _, t = await call(c, "browser_console_messages")
    check("debug note" in t and "script failed" in t, "console at every level", t)
    await call(c, "browser_console_messages", {"level": "loud"}, error=True)
    _, t = await call(c, "browser_network_requests", {"filter": "/js-err.r$", "static": True})
    check("/js-error" in t and "favicon" not in t, "network requests filtered by a regex", t)
    _, t = await call(c, "browser_network_requests", {"filter": "/nothing-like-this/"})
    check("No requests" in t, "a filter that matches nothing", t)
    _, t = await call(c, "browser_network_requests", {"filter": "a("}, error=True)
    check("bad regular expression" in t, "a bad filter is a typed error", t)
    # One request in full (Playwright MCP's browser_network_request).
    await call(c, "browser_evaluate", {"function": "async () => (await (await fetch('/api/items', {method: 'POST', headers: {'Content-Type': 'application/json', 'X-Trace': 'abc-123'}, body: JSON.stringify({q: 'widgets'})})).text()).length"})
    _, t = await call(c, "browser_network_requests", {"filter": "/api/"})
    m = re.search(r"(\d+)\. \[fetch\] POST \S+/api/items => \[200\] OK", t)
    check(m is not None, "a fetch listed, numbered, with its method and status", t)
    _, t = await call(c, "browser_network_request", {"index": int(m.group(1))})
    check("x-trace: abc-123" in t.lower() and '{"q":"widgets"}' in t and "### Response headers" in t
          and "application/json" in t and "API-ITEM-WIDGET" in t, "a request in full, its response body too", t)
    _, t = await call(c, "browser_network_request", {"index": int(m.group(1)), "part": "request-body"})
    check("### Request body" in t and '{"q":"widgets"}' in t and "### Request headers" not in t
          and "### Response" not in t, "one part of a request", t)
    # A response the page never read has no body yet; the answer says why.
    await call(c, "browser_evaluate", {"function": "async () => (await fetch('/api/late-data')).status"})
    _, t = await call(c, "browser_network_requests", {"filter": "late-data"})
    m = re.search(r"(\d+)\. \[fetch\] GET \S+/api/late-data", t)
    _, t = await call(c, "browser_network_request", {"index": int(m.group(1)), "part": "response-body"})
    check("not read by the page yet" in t, "a body not held says why", t)
    _, t = await call(c, "browser_network_request", {"index": 999})
    check("No request 999" in t, "a number past the list", t)
    await call(c, "browser_network_request", {"index": 0}, error=True)
    await call(c, "browser_network_request", {"index": 1, "part": "cookies"}, error=True)

    # Dialogs never block; answers can be set.
    _, t = await call(c, "browser_navigate", {"url": base + "/dialogs"})
    check("Dialog dismissed" in t and "Welcome to the dialog page" in t, "dialogs are reported", t)
    await call(c, "browser_handle_dialog", {"accept": True, "promptText": "yes"})
    _, t = await call(c, "browser_evaluate", {"function": "() => prompt('Your name?')"})
    check('yes' in t, "a prompt answered with promptText", t)

    # File upload, only from the upload directory.
    updir = os.path.join(workdir, "uploads")
    await call(c, "browser_evaluate", {"function": "() => { document.body.insertAdjacentHTML('beforeend', '<input type=file id=f>'); return 1; }"})
    await call(c, "browser_file_upload", {"paths": [os.path.join(updir, "note.txt")]})
    _, t = await call(c, "browser_evaluate", {"function": "() => document.getElementById('f').files[0].name"})
    check("note.txt" in t, "file uploaded", t)
    _, t = await call(c, "browser_file_upload", {"paths": ["/etc/passwd"]}, error=True)
    check("not a file under the upload directory" in t, "upload outside the directory refused", t)

    # Tabs and resize.
    _, t = await call(c, "browser_tabs", {"action": "new", "url": base + "/app/search"})
    check("Opened tab 1" in t and "(current)" in t, "new tab", t)
    _, t = await call(c, "browser_tabs", {"action": "list"})
    check(t.count("- ") >= 2 and "/app/search" in t, "tab list", t)
    await call(c, "browser_tabs", {"action": "select", "index": 0})
    _, t = await call(c, "browser_evaluate", {"function": "() => location.pathname"})
    check("/dialogs" in t, "tab 0 selected", t)
    await call(c, "browser_tabs", {"action": "close", "index": 1})
    await call(c, "browser_tabs", {"action": "select", "index": 5}, error=True)
    # A capped snapshot, then find and scope reach what the cap cut.
    await call(c, "browser_navigate", {"url": base + "/app/controls"})
    _, t = await call(c, "browser_snapshot", {"maxChars": 500})
    check("pruned" in t and "Load more" not in t, "a capped snapshot", t)
    check("`find` searches every line" in t, "a capped snapshot says how to reach the rest", t)
    _, t = await call(c, "browser_snapshot", {"find": "load MORE"})
    m = re.search(r'button "Load more" \[ref=(e\d+)\]', t)
    check("1 line(s) matching" in t and m is not None, "find reaches a cut button", t)
    await call(c, "browser_click", {"target": m.group(1)})
    _, t = await call(c, "browser_snapshot", {"find": "Choose a size"})
    m = re.search(r'combobox "Size" \[ref=(e\d+)\]', t)
    check(m is not None, "find a combobox by the text it shows", t)
    _, t = await call(c, "browser_snapshot", {"scope": m.group(1)})
    check('```yaml\n- combobox "Size"' in t and "main [ref" not in t, "scope to a ref", t)
    _, t = await call(c, "browser_snapshot", {"scope": "e99999"})
    check("No line holds ref e99999" in t, "scope of an unknown ref", t)
    await call(c, "browser_snapshot", {"diff": True, "find": "x"}, error=True)
    # Playwright MCP's forms of the same: target (a ref or a selector),
    # depth, and browser_find with text or a regular expression.
    _, t = await call(c, "browser_snapshot", {"target": m.group(1)})
    check('```yaml\n- combobox "Size"' in t and "main [ref" not in t, "snapshot target as a ref", t)
    _, t = await call(c, "browser_snapshot", {"target": "#size"})
    check('```yaml\n- combobox "Size"' in t and "main [ref" not in t, "snapshot target as a selector", t)
    await call(c, "browser_snapshot", {"target": "#no-such-thing"}, error=True)
    _, t = await call(c, "browser_snapshot", {"depth": 1})
    check("to depth 1" in t and "- main [ref=" in t and "\n  - " not in t and "deeper lines left out" in t,
          "snapshot to depth 1", t)
    _, t = await call(c, "browser_find", {"text": "load MORE"})
    check('button "Load more" [ref=' in t and "1 line(s) matching" in t, "browser_find by text", t)
    _, t = await call(c, "browser_find", {"regex": "/^- button \"(add|load) more\"/i"})
    check('button "Load more"' in t, "browser_find by a regular expression with a flag", t)
    _, t = await call(c, "browser_find", {"text": "no such words anywhere"})
    check("Nothing on the page matches" in t, "browser_find with no match", t)
    await call(c, "browser_find", {}, error=True)
    # Buttons and keys on a click (Playwright MCP's button and modifiers).
    await call(c, "browser_evaluate", {"function": "() => { const b = document.getElementById('more'); b.addEventListener('contextmenu', (e) => { e.preventDefault(); document.title = 'menu ' + e.button; }); b.addEventListener('click', (e) => { if (e.shiftKey) document.title = 'shift ' + e.button; }); return 1; }"})
    _, t = await call(c, "browser_click", {"target": "#more", "button": "right"})
    check("Right-clicked" in t and "Page Title: menu 2" in t, "a right click", t)
    _, t = await call(c, "browser_click", {"target": "#more", "modifiers": ["Shift"]})
    check("Page Title: shift 0" in t, "a click with shift held", t)
    await call(c, "browser_click", {"target": "#more", "button": "sideways"}, error=True)
    await call(c, "browser_click", {"target": "#more", "button": "right", "doubleClick": True}, error=True)
    # Drag and drop (Playwright MCP's browser_drag).
    await call(c, "browser_evaluate", {"function": "() => { document.body.insertAdjacentHTML('afterbegin', '<div id=src draggable=true style=\"width:90px;height:40px\">Drag me</div><div id=dst style=\"width:90px;height:40px\">Drop here</div>'); const src = document.getElementById('src'), dst = document.getElementById('dst'); src.addEventListener('dragstart', (e) => e.dataTransfer.setData('text/plain', 'x1')); dst.addEventListener('dragover', (e) => e.preventDefault()); dst.addEventListener('drop', (e) => { e.preventDefault(); document.title = 'dropped ' + e.dataTransfer.getData('text/plain'); }); return 1; }"})
    _, t = await call(c, "browser_drag", {"startElement": "Drag me", "startTarget": "#src", "endElement": "Drop here", "endTarget": "#dst"})
    check('Dragged "Drag me"' in t and "Page Title: dropped x1" in t, "browser_drag drops with its data", t)
    _, t = await call(c, "browser_drag", {"startTarget": "#src"}, error=True)
    check("endTarget" in t, "a drag without its end says which is missing", t)
    # A link that opens a new tab: the tab joins the list (not current).
    await call(c, "browser_navigate", {"url": base + "/app/help"})
    _, t = await call(c, "browser_snapshot")
    check('link "support@shop.example"' in t, "a page's e-mail address stays targetable", t)
    await call(c, "browser_click", {"target": 'role=link[name="Shipping rates"]'})
    _, t = await call(c, "browser_tabs", {"action": "list"})
    check("- 1: [Help] (" in t and "/app/help/article?id=7" in t and "opened by another tab" in t, "popup listed as a tab", t)
    await call(c, "browser_tabs", {"action": "select", "index": 1})
    _, t = await call(c, "browser_snapshot")
    check("Was this helpful?" in t, "popup tab driven", t)
    await call(c, "browser_click", {"target": 'role=button[name="Yes"]'})
    _, t = await call(c, "browser_evaluate", {"function": "() => document.getElementById('thanks').textContent"})
    check("Thanks for your feedback" in t, "clicked in the popup tab", t)
    await call(c, "browser_tabs", {"action": "close", "index": 1})
    _, t = await call(c, "browser_tabs", {"action": "list"})
    check("/app/help/article" not in t, "a closed popup tab stays closed", t)
    await call(c, "browser_tabs", {"action": "select", "index": 0})
    await call(c, "browser_resize", {"width": 800, "height": 600})
    _, t = await call(c, "browser_evaluate", {"function": "() => innerWidth"})
    check("800" in t, "resized", t)

    # The seed's aliases.
    await call(c, "playwright_navigate", {"url": base + "/app/login"})
    await call(c, "playwright_fill", {"selector": "#user", "value": "carol"})
    await call(c, "playwright_hover", {"selector": "#remember"})
    await call(c, "playwright_click", {"selector": "#remember"})
    _, t = await call(c, "playwright_evaluate", {"script": "document.getElementById('user').value"})
    check("carol" in t, "playwright_fill + playwright_evaluate", t)
    _, t = await call(c, "playwright_get_content")
    check("<form" in t and PASSWORD not in t, "playwright_get_content (secret redacted)", t[:300])
    await call(c, "playwright_navigate", {"url": base + "/app/item?id=2"})
    await call(c, "playwright_select", {"selector": "#country", "value": "fr"})
    r, t = await call(c, "playwright_screenshot", {"name": "mobile", "width": 375, "height": 667})
    check(os.path.isfile(os.path.join(shots, "mobile.png")), "playwright_screenshot saved", t)
    await call(c, "playwright_get_console_logs")

    # Errors an agent must be able to act on.
    port = free_port()
    _, t = await call(c, "browser_navigate", {"url": f"http://localhost:{port}/"}, error=True)
    check(f"nothing is listening on localhost:{port}" in t, "closed localhost port", t)
    _, t = await call(c, "browser_navigate", {"url": "http://10.1.2.3/"}, error=True)
    check("URL policy" in t, "policy refusal", t)
    _, t = await call(c, "browser_navigate", {"url": "file:///etc/passwd"}, error=True)
    check("file:// URLs are refused" in t and "/etc/passwd" in t, "file:// refused, the message whole", t)
    _, t = await call(c, "browser_navigate", {"url": base + "/stall?ms=30000"}, error=True)
    check("Timed out" in t or "timed out" in t, "navigation timeout", t)
    _, t = await call(c, "browser_click", {"element": "x"}, error=True)
    check("give target" in t, "missing target", t)
    _, t = await call(c, "no_such_tool", error=True)
    check("tools/list" in t, "unknown tool", t)
    _, t = await call(c, "browser_navigate", {"nope": 1}, error=True)
    check("bad arguments" in t, "bad arguments", t)
    # The server is still fine after all that, and the tab after the timeout.
    _, t = await call(c, "browser_navigate", {"url": base + "/app/login"})
    check("/app/login" in t and "fresh" not in t, "navigation after a timed-out one", t)

    # oxwright's own tools.
    _, t = await call(c, "fetch_markdown", {"url": base + "/", "content": "full"})
    check("Tokens:" in t and "#" in t, "fetch_markdown", t[:400])
    _, t = await call(c, "fetch_markdown", {"url": base + "/", "content": "nonsense"}, error=True)
    # Actions before the read, an excluded region, the cache.
    _, t = await call(c, "fetch_markdown", {
        "url": base + "/app/login", "content": "full", "exclude": ["nav"],
        "actions": ['fill: textbox "Username" = alice', 'fill: textbox "Password" = wrong', 'click: button "Sign in"'],
    })
    check("Wrong username or password" in t and "Browse without signing in" not in t, "fetch_markdown actions and exclude", t[:600])
    _, t = await call(c, "fetch_markdown", {"url": base + "/", "actions": ["frobnicate the page"]}, error=True)
    _, t = await call(c, "fetch_markdown", {"url": base + "/app/item?id=1", "maxAgeMs": 600000})
    check("Cache: miss" in t, "fetch_markdown first cached fetch is a miss", t[:400])
    _, t = await call(c, "fetch_markdown", {"url": base + "/app/item?id=1", "maxAgeMs": 600000})
    check("Cache: hit" in t, "fetch_markdown second cached fetch is a hit", t[:400])
    # Request shaping, as the job's own options.
    _, t = await call(c, "fetch_markdown", {
        "url": base + "/options/echo", "content": "full", "userAgent": "OxMcp/1.0", "locale": "de-DE",
        "timezone": "Asia/Tokyo", "viewport": {"width": 800, "height": 600},
    })
    for seen in ["UA=OxMcp/1.0", "LANG=de-DE", "TZ=Asia/Tokyo", "VIEWPORT=800x600"]:
        check(seen in t, f"fetch_markdown shapes the page: {seen}", t[:600])
    _, t = await call(c, "fetch_markdown", {"url": base + "/", "dialogs": "sometimes"}, error=True)
    check("`dialogs`" in t and "sometimes" in t, "a bad value names its argument", t)
    # The arguments are the job's options: their values listed, a credential refused with the reason.
    schema = next(x for x in tools if x.name == "fetch_markdown").input_schema
    check(set(schema["properties"]["waitUntil"].get("enum", [])) >= {"ready", "load", "networkidle"},
          "fetch_markdown lists the values of waitUntil", schema["properties"].get("waitUntil"))
    check("render" in schema["properties"] and "headers" not in schema["properties"], "fetch_markdown's arguments", list(schema["properties"]))
    _, t = await call(c, "fetch_markdown", {"url": base + "/", "headers": {"Authorization": "Bearer x"}}, error=True)
    check("credentials" in t and "Bearer" not in t, "a credential argument is refused with the reason", t)
    _, t = await call(c, "fetch_markdown", {"url": base + "/", "colour": "red"}, error=True)
    check("`colour` is no argument" in t, "an unknown argument is named", t)
    _, t = await call(c, "fetch_markdown", {"url": base + "/", "render": "auto", "wait_until": "load", "maxTokens": None})
    check("- Render: " in t, "fetch_markdown render auto says how it read (a snake_case name, a null left out)", t[:400])
    _, t = await call(c, "load_sitemap", {"target": base + "/"})
    check(re.search(r"^\d+ URLs", t) is not None and base in t, "load_sitemap", t[:400])
    await crawl(c, base)
    wf = 'fill: textbox "Username" = alice\nfill: textbox "Password" = {{APP_PASSWORD}}\nclick: button "Sign in"\nexpect: text "Signed in as alice"\n'
    r, t = await call(c, "run_workflow", {"workflow": wf, "url": base + "/app/login", "name": "login"})
    check("Completed" in t and "steps.jsonl" in t and PASSWORD not in t, "run_workflow", t)
    check(r.structured_content and r.structured_content.get("status") == "completed", "run_workflow structured", r.structured_content)
    _, t = await call(c, "run_workflow", {"workflow": "", "url": base + "/app/login", "workflow_id": "never-ran", "replay": True}, error=True)
    check("nothing is recorded" in t, "run_workflow replay of an unknown workflow", t)
    _, t = await call(c, "run_workflow", {"workflow": "", "url": base + "/app/login", "replay": True}, error=True)
    check("workflow_id" in t, "run_workflow replay without an id", t)
    _, t = await call(c, "run_workflow", {"workflow": wf, "url": base + "/app/login", "sites": [{"url": "shop.example"}]}, error=True)
    check("absolute http(s) URL" in t, "run_workflow refuses a bad site profile", t)
    if os.environ.get("OXWRIGHT_DRIVE_LLM"):
        # The server's LLM is the test's scripted one: the prompt it got is checked there.
        sites = [{"url": base + "/app", "name": "Shop fixture", "login_hints": ["any username works"]}]
        _, t = await call(c, "run_workflow", {"workflow": "Type rust into the search box", "url": base + "/app/search",
                                              "sites": sites, "sitemap_hints": True})
        check("Completed" in t, "run_workflow with site profiles and sitemap hints", t)

    # Close: the next call opens a fresh page.
    await call(c, "browser_close")
    _, t = await call(c, "browser_tabs", {"action": "list"})
    check("No tabs open" in t, "closed", t)


async def crawl(c, base):
    """The crawl tool: the start page and the articles it links to, once each, as Markdown."""
    r, t = await call(c, "crawl", {
        "url": base + "/", "maxDepth": 1, "limit": 4, "includePaths": ["/articles/**"],
        "render": "never", "perHostDelayMs": 0,
    })
    pages = (r.structured_content or {}).get("pages", [])
    urls = [p["url"] for p in pages]
    check(re.search(r"^Crawl \S+: 4 page\(s\) taken, 0 failed", t) is not None, "crawl headline", t[:400])
    check(len(urls) == 4 and len(set(urls)) == 4, "crawl takes each page once, within the limit", urls)
    check(urls[0] == base + "/" and pages[0]["depth"] == 0, "crawl lists the start page first", pages[:1])
    check(all(u.startswith(base + "/articles/") and p["depth"] == 1 for u, p in zip(urls[1:], pages[1:])),
          "crawl follows only the included paths, one link deep", urls)
    check("- Not taken: " in t and "limit" in t and "excluded" in t, "crawl counts what it did not take by reason", t[:600])
    check(f"## {urls[1]} (depth 1)" in t, "crawl answers with each page's Markdown", t[:1200])
    skipped = (r.structured_content or {}).get("skipped", {})
    check(skipped.get("excluded", 0) > 0, "crawl's structured result counts the excluded", skipped)
    r, t = await call(c, "crawl", {"url": base + "/", "maxDepth": 1, "limit": 3, "render": "never",
                                   "includePaths": ["/articles/**"], "perHostDelayMs": 0, "maxChars": 400})
    check("more page(s) not shown within maxChars 400" in t and len(t) < 1500, "crawl keeps the answer within maxChars", t)
    check(len((r.structured_content or {}).get("pages", [])) == 3, "crawl's structured result lists every page", r.structured_content)
    _, t = await call(c, "crawl", {"url": base + "/", "limit": 500}, error=True)
    check("`limit` is 1 to 100" in t, "crawl refuses a limit past a call's", t)
    _, t = await call(c, "crawl", {"url": base + "/", "cookies": [{"name": "s", "value": "v"}]}, error=True)
    check("not taken here: credentials" in t, "crawl refuses credentials as fetch_markdown does", t)
    schema = next(x for x in (await c.list_tools()).tools if x.name == "crawl").input_schema
    check(all(k in schema["properties"] for k in ["maxDepth", "includePaths", "ignoreRobots", "render", "include"]),
          "crawl's arguments", list(schema["properties"]))


def descendants(pid):
    """Every process below `pid`, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


async def crash_and_replace(c, base):
    """A renderer killed under the page: the client is told, the tab gets a new page."""
    await call(c, "browser_navigate", {"url": base + "/app/login"})
    renderers = [p for p in descendants(os.getpid()) if "--type=renderer" in cmdline(p)]
    check(renderers, "the server's Chromium has renderers", "")
    for pid in renderers:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    told = ""
    for _ in range(50):
        r = await c.call_tool("browser_snapshot", {})
        if r.is_error:
            told = text(r)
            break
        await asyncio.sleep(0.1)
    check("crashed and was replaced" in told, "a crashed page is reported and replaced", told)
    _, t = await call(c, "browser_navigate", {"url": base + "/app/search"})
    check("/app/search" in t, "the replaced page navigates", t)


async def frames(c, base, second_port):
    """Forms in a frame of another site (a renderer of its own under site
    isolation) and in a frame of another port: typed into and submitted."""
    for query, who in [("", "ada@example.com"), (f"?host=127.0.0.1&port={second_port}", "bob@example.com")]:
        await call(c, "browser_navigate", {"url": base + "/app/xframe" + query})
        await call(c, "browser_wait_for", {"text": "Subscribe"})
        _, snap = await call(c, "browser_snapshot")
        box = find_ref(snap, r'textbox "Email address"')
        button = find_ref(snap, r'button "Subscribe"')
        await call(c, "browser_type", {"element": "Email address", "target": box, "text": who})
        await call(c, "browser_click", {"element": "Subscribe", "target": button})
        await call(c, "browser_wait_for", {"text": "Subscribed " + who})
        _, snap = await call(c, "browser_snapshot")
        check("Subscribed " + who in snap, f"the form in the frame of {query or 'another site'} was submitted", snap)


async def isolation(make_client, base):
    """Two clients at once see separate cookies and tabs."""
    async with make_client() as a, make_client() as b:
        await call(a, "browser_navigate", {"url": base + "/app/login"})
        await call(b, "browser_navigate", {"url": base + "/app/login"})
        await call(a, "browser_evaluate", {"function": "() => { document.cookie = 'who=alice; path=/'; return document.cookie; }"})
        _, t = await call(b, "browser_evaluate", {"function": "() => document.cookie || 'none'"})
        check("alice" not in t, "client B does not see client A's cookie", t)
        await call(a, "browser_tabs", {"action": "new", "url": base + "/app/search"})
        _, ta = await call(a, "browser_tabs", {"action": "list"})
        _, tb = await call(b, "browser_tabs", {"action": "list"})
        check("/app/search" in ta and "/app/search" not in tb and "- 1:" not in tb, "tabs are per client", ta + tb)


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        binary, base, workdir = sys.argv[2:5]
        args = json.loads(os.environ["OXWRIGHT_MCP_ARGS"])

        def make():
            return Client(StdioServerParameters(command=binary, args=args, env=dict(os.environ)))
    else:
        url, base, workdir, token = sys.argv[2:6]
        # No token: refused.
        async with httpx2.AsyncClient() as h:
            resp = await h.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                headers={"Accept": "application/json, text/event-stream"})
            check(resp.status_code == 401, "HTTP without a bearer token is refused", resp.status_code)

        def make():
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            return Client(streamable_http_client(url, http_client=http))
    async with make() as c:
        await every_tool(c, base, workdir)
        if mode == "stdio":
            await frames(c, base, os.environ["OXWRIGHT_DRIVE_SECOND_PORT"])
            await crash_and_replace(c, base)
    await isolation(make, base)
    print(f"mcp {mode}: {CHECKS} checks ok")


asyncio.run(main())
