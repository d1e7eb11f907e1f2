// What a page snapshot can be built from, timed on the same pages in one
// Chromium: the accessibility tree oxwright reads today
// (`Accessibility.getFullAXTree`), the flattened DOM with computed styles
// (`DOMSnapshot.captureSnapshot`), and Playwright's injected aria walk
// (`locator.ariaSnapshot()`, what @playwright/mcp's snapshot rests on).
// Median of 7 calls each, after the page settled for a second.
//
//   python3 -m http.server 8766 --bind 127.0.0.1 -d CORPUS/pages &   # CORPUS: bench/quality/prepare.py --out
//   node bench/mcp/snapshot_sources.js http://127.0.0.1:8766/r-buzzfeed-1.html ...
const path = require('path');
const { chromium } = require(path.join(__dirname, '../../infra/node/node_modules/playwright-core'));

(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROME_PATH || '/usr/bin/chromium', headless: true });
  const page = await browser.newPage();
  const cdp = await page.context().newCDPSession(page);
  const median = async (fn) => {
    const times = [];
    let out;
    for (let i = 0; i < 7; i++) {
      const t0 = performance.now();
      out = await fn();
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    return [times[3], out];
  };
  const kb = (v) => (JSON.stringify(v).length / 1024).toFixed(0);
  console.log(['page', 'ax ms', 'ax nodes', 'ax KB', 'domsnapshot ms', 'domsnapshot KB', 'aria walk ms'].join('\t'));
  for (const url of process.argv.slice(2)) {
    await page.goto(url, { waitUntil: 'domcontentloaded' }).catch(() => {});
    await page.waitForTimeout(1000);
    const [ax, tree] = await median(() => cdp.send('Accessibility.getFullAXTree'));
    const [ds, snap] = await median(() =>
      cdp.send('DOMSnapshot.captureSnapshot', {
        computedStyles: ['display', 'visibility', 'text-transform'],
        includeDOMRects: false,
      }));
    const [aria] = await median(() => page.locator('body').ariaSnapshot());
    console.log([url.split('/').pop(), ax.toFixed(1), tree.nodes.length, kb(tree), ds.toFixed(1), kb(snap), aria.toFixed(1)].join('\t'));
  }
  await browser.close();
})();
