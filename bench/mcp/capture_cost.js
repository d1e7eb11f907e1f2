// Could a walker in the page replace DOMSnapshot.captureSnapshot as the
// snapshot's source? Times, on the same settled pages in one Chromium
// (median of 7 calls each): the capture the DOM reader uses
// (`DOMSnapshot.captureSnapshot` with two computed styles), the whole DOM
// tree (`DOM.getDocument`, depth -1, pierce), and `page_walker.js` in an
// isolated world — everything the reader needs (per-element keys in a
// WeakMap, checkVisibility and two computed styles, the attributes the
// reader reads, input values, the flat tree through open shadow roots and
// slots) returned as one JSON string — whole, and with only its length
// returned (the walk without the transfer).
//
//   python3 -m http.server 8766 --bind 127.0.0.1 -d CORPUS/pages &   # CORPUS: bench/quality/prepare.py --out
//   node bench/mcp/capture_cost.js http://127.0.0.1:8766/r-buzzfeed-1.html ...
const fs = require('fs');
const path = require('path');
const { chromium } = require(path.join(__dirname, '../../infra/node/node_modules/playwright-core'));

const walker = fs.readFileSync(path.join(__dirname, 'page_walker.js'), 'utf8');
const lengthOnly = walker.replace('sel });', 'sel }).length;');

(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROME_PATH || '/usr/bin/chromium', headless: true });
  const page = await browser.newPage();
  const cdp = await page.context().newCDPSession(page);
  const median = async (fn) => {
    const times = [];
    for (let i = 0; i < 7; i++) {
      const t0 = performance.now();
      await fn();
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    return times[3].toFixed(1);
  };
  console.log(['page', 'capture ms', 'getDocument ms', 'walker ms', 'walker, length only ms', 'walker KB'].join('\t'));
  for (const url of process.argv.slice(2)) {
    await page.goto(url, { waitUntil: 'domcontentloaded' });
    await page.waitForTimeout(2500);
    const tree = await cdp.send('Page.getFrameTree');
    const world = await cdp.send('Page.createIsolatedWorld', { frameId: tree.frameTree.frame.id, worldName: 'walk' });
    const walk = (expression) => cdp.send('Runtime.evaluate', { expression, contextId: world.executionContextId, returnByValue: true });
    const capture = await median(() => cdp.send('DOMSnapshot.captureSnapshot', { computedStyles: ['display', 'visibility'], includeDOMRects: false }));
    const doc = await median(() => cdp.send('DOM.getDocument', { depth: -1, pierce: true }));
    const whole = await median(() => walk(walker));
    const bare = await median(() => walk(lengthOnly));
    const kb = ((await walk(walker)).result.value.length / 1024).toFixed(0);
    console.log([url.split('/').pop(), capture, doc, whole, bare, kb].join('\t'));
  }
  await browser.close();
})();
