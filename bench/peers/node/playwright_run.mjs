// The plain Playwright peer of bench/peers/peers.py: what a user writes
// first. One Debian Chromium (`$PEERS_CHROMIUM`, else /usr/bin/chromium; no
// browser download), one context, N pages in
// flight (default 4), each job `newPage` + `goto` (default `load` wait,
// 30 s) + `page.content()` + turndown; images, fonts and media aborted by a
// route. The Chromium flags given after the concurrency (peers.py passes
// the same ones to every peer) go to `chromium.launch({ args })`.
//
//   node bench/peers/node/playwright_run.mjs <urls.tsv: id<TAB>url> <out dir> [concurrency [chromium flag ...]]
//
// Writes <out>/<id>.md per converted page; stderr has `OK <id> <ms>` per
// page and `FAIL <id> <reason>` per failure.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import TurndownService from 'turndown';

const [list, out, conc = '4', ...flags] = process.argv.slice(2);
const jobs = readFileSync(list, 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => l.split('\t'));
mkdirSync(out, { recursive: true });

const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced' });
turndown.remove(['script', 'style', 'noscript', 'template']);

const browser = await chromium.launch({ executablePath: process.env.PEERS_CHROMIUM || '/usr/bin/chromium', headless: true, args: flags });
const context = await browser.newContext();
const blocked = new Set(['image', 'font', 'media']);
await context.route('**/*', (route) =>
  blocked.has(route.request().resourceType()) ? route.abort() : route.continue(),
);

let next = 0;
let failed = 0;
async function worker() {
  while (next < jobs.length) {
    const [id, url] = jobs[next++];
    const page = await context.newPage();
    const t0 = Date.now();
    try {
      await page.goto(url, { timeout: 30000 });
      const html = await page.content();
      writeFileSync(join(out, `${id}.md`), turndown.turndown(html));
      console.error(`OK ${id} ${Date.now() - t0} ms`);
    } catch (e) {
      failed++;
      console.error(`FAIL ${id} ${String(e.message || e).split('\n')[0]}`);
    } finally {
      await page.close().catch(() => {});
    }
  }
}
await Promise.all(Array.from({ length: Number(conc) }, worker));
await browser.close();
console.log(JSON.stringify({ pages: jobs.length, failed }));
