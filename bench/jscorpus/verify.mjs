#!/usr/bin/env node
// Checks a built corpus against its truth.jsonl in both directions:
// `node verify.mjs OUTDIR [--chromium PATH]`.
//
// - served: the HTML the server sends (fetched over HTTP, scripts not run,
//   <noscript> ignored) holds every expected snippet exactly when the page
//   says served_sufficient;
// - rendered: in Chromium (playwright-core driving an installed Chromium;
//   nothing is downloaded), every expected snippet appears within 6 s of
//   navigation, shadow roots included, redirects followed; page errors
//   (a failed hydration, say) are reported.
// Exit code 0 when every page passes both checks.

import { createServer } from 'node:http';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve } from 'node:path';

import { servedText } from './src/served.mjs';

const args = process.argv.slice(2);
const outArg = args.find((a) => !a.startsWith('--'));
if (!outArg) {
  console.error('usage: node verify.mjs OUTDIR [--chromium PATH] [--only ID]');
  process.exit(2);
}
const flag = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const OUT = resolve(outArg);
const CHROMIUM = flag('--chromium') || process.env.CHROME_PATH || '/usr/bin/chromium';
const ONLY = flag('--only');

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.json': 'application/json', '.css': 'text/css; charset=utf-8', '.gif': 'image/gif' };

function serve() {
  const server = createServer((req, res) => {
    let path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let file = normalize(join(OUT, path));
    if (!file.startsWith(OUT)) {
      res.writeHead(403).end();
      return;
    }
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!existsSync(file)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] || 'application/octet-stream', 'cache-control': 'no-store' });
    res.end(readFileSync(file));
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok(server)));
}

// Text of the rendered page, open shadow roots included.
const RENDERED_TEXT = () => {
  const out = [];
  const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD']);
  const walk = (n) => {
    if (n.nodeType === 3) {
      out.push(n.nodeValue);
      return;
    }
    if (n.nodeType !== 1 && n.nodeType !== 11) return;
    if (skip.has(n.nodeName)) return;
    if (n.shadowRoot) walk(n.shadowRoot);
    for (const c of n.childNodes) walk(c);
  };
  walk(document.documentElement);
  return out.join(' ').replace(/\s+/g, ' ');
};

const norm = (s) => s.replace(/\s+/g, ' ').trim();

async function main() {
  const truth = readFileSync(join(OUT, 'truth.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((t) => !ONLY || t.id === ONLY);
  const server = await serve();
  const base = `http://127.0.0.1:${server.address().port}`;
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  let bad = 0;
  try {
    for (const t of truth) {
      const problems = [];
      // Served direction.
      const html = await (await fetch(base + t.path)).text();
      const served = servedText(html);
      const inServed = t.expected.every((s) => served.includes(norm(s)));
      if (inServed !== t.served_sufficient) problems.push(`served holds all snippets: ${inServed}, truth says ${t.served_sufficient}`);
      // Rendered direction.
      const context = await browser.newContext();
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(String(e.message || e).slice(0, 160)));
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text().slice(0, 160)));
      const t0 = Date.now();
      let seenAt = null;
      let text = '';
      try {
        await page.goto(base + t.path, { waitUntil: 'domcontentloaded', timeout: 10_000 });
        while (Date.now() - t0 < 6_000) {
          try {
            text = await page.evaluate(RENDERED_TEXT);
          } catch {
            text = ''; // a navigation in progress
          }
          if (t.expected.every((s) => text.includes(norm(s)))) {
            seenAt = Date.now() - t0;
            break;
          }
          await page.waitForTimeout(100);
        }
      } catch (e) {
        problems.push(`navigation: ${String(e.message).split('\n')[0]}`);
      }
      if (seenAt === null) {
        const missing = t.expected.filter((s) => !text.includes(norm(s)));
        problems.push(`rendered lacks ${missing.length} of ${t.expected.length} snippets: ${JSON.stringify(missing[0]).slice(0, 100)}`);
      }
      if (errors.length) problems.push(`page errors: ${errors.join(' | ')}`);
      const finalPath = new URL(page.url()).pathname;
      await context.close();
      if (problems.length) bad++;
      console.log(
        `${problems.length ? 'FAIL' : 'ok  '} ${t.id.padEnd(36)} served=${String(t.served_sufficient).padEnd(5)} rendered=${seenAt === null ? '—' : `${seenAt}ms`}` +
          (finalPath !== t.path ? ` → ${finalPath}` : '') +
          (problems.length ? `\n     ${problems.join('\n     ')}` : ''),
      );
    }
  } finally {
    await browser.close();
    server.close();
  }
  console.log(`\n${truth.length - bad} of ${truth.length} pages pass`);
  process.exit(bad ? 1 : 0);
}

await main();
