"""The crawl4ai peer of bench/peers/peers.py, with crawl4ai's defaults where
it has them:

- `AsyncWebCrawler` + `arun_many`, default `BrowserConfig` and
  `CrawlerRunConfig` (wait `domcontentloaded`, cache bypassed, 60 s page
  timeout), Markdown = `fit_markdown` of `DefaultMarkdownGenerator` with its
  documented `PruningContentFilterLXML()` (0.9.5 deprecates the BeautifulSoup
  `PruningContentFilter` for it, same output; without a filter there is no fit
  Markdown);
- concurrency N (peers.py's `--concurrency`, default 4): crawl4ai's default
  dispatcher class, `MemoryAdaptiveDispatcher(max_session_permit=N)`,
  without the per-domain politeness delay (0.1-0.4 s between requests to
  one host) that `arun_many` adds when given no dispatcher: every page here
  is on one loopback host, standing for many real ones;
- the Chromium flags given after the concurrency (peers.py passes the same
  ones to every peer: `--host-resolver-rules=...`,
  `--blink-settings=imagesEnabled=false`) go in as
  `BrowserConfig(extra_args=...)`, added to crawl4ai's own flags.

Two shims, neither a download: crawl4ai has no option for the browser
binary (`BrowserConfig` passes `channel`, never `executable_path`, to
Playwright's `chromium.launch`), so `BrowserManager._build_browser_args`
is wrapped to add `executable_path` (`$PEERS_CHROMIUM`, else Debian's
`/usr/bin/chromium`; `crawl4ai-setup` / `playwright install` are never
run); and
`create_browser_context` is wrapped to abort image, font and media requests
as the other peers do (crawl4ai only blocks them in `text_mode`, which also
changes other settings).

    python crawl4ai_run.py <urls.tsv: id<TAB>url> <out dir> [concurrency [chromium flag ...]]

Writes <out>/<id>.md per converted page; stderr has `FAIL <id> <message>`
per failure.
"""

import asyncio
import os
import sys
from pathlib import Path

from crawl4ai import AsyncWebCrawler, BrowserConfig, CrawlerRunConfig
from crawl4ai.async_dispatcher import MemoryAdaptiveDispatcher
from crawl4ai.browser_manager import BrowserManager
from crawl4ai.content_filter_strategy import PruningContentFilterLXML
from crawl4ai.markdown_generation_strategy import DefaultMarkdownGenerator

CHROMIUM = os.environ.get("PEERS_CHROMIUM") or "/usr/bin/chromium"
BLOCKED = {"image", "font", "media"}

_build_args = BrowserManager._build_browser_args


def _build_browser_args(self):
    args = _build_args(self)
    args["executable_path"] = CHROMIUM
    return args


BrowserManager._build_browser_args = _build_browser_args

_create_context = BrowserManager.create_browser_context


async def _route(route):
    if route.request.resource_type in BLOCKED:
        await route.abort()
    else:
        await route.fallback()


async def create_browser_context(self, *a, **kw):
    ctx = await _create_context(self, *a, **kw)
    await ctx.route("**/*", _route)
    return ctx


BrowserManager.create_browser_context = create_browser_context


async def main():
    lst, out = Path(sys.argv[1]), Path(sys.argv[2])
    conc = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    flags = sys.argv[4:]
    out.mkdir(parents=True, exist_ok=True)
    jobs = [l.split("\t") for l in lst.read_text().splitlines() if l.strip()]
    ids = {url: i for i, url in jobs}
    run = CrawlerRunConfig(
        markdown_generator=DefaultMarkdownGenerator(content_filter=PruningContentFilterLXML()),
        verbose=False,
    )
    failed = 0
    async with AsyncWebCrawler(config=BrowserConfig(verbose=False, extra_args=flags)) as crawler:
        results = await crawler.arun_many(
            [url for _, url in jobs],
            config=run,
            dispatcher=MemoryAdaptiveDispatcher(max_session_permit=conc),
        )
        for r in results:
            i = ids.get(r.url) or ids.get(getattr(r, "redirected_url", None) or "")
            md = r.markdown.fit_markdown if r.success and r.markdown else ""
            if i and md and md.strip():
                (out / f"{i}.md").write_text(md)
            else:
                failed += 1
                msg = " ".join((r.error_message or "empty fit_markdown").split())
                print(f"FAIL {i or r.url} {msg[:500]}", file=sys.stderr)
    print(f'{{"pages": {len(jobs)}, "failed": {failed}}}')


if __name__ == "__main__":
    asyncio.run(main())
