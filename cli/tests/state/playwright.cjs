// Playwright's side of a saved login, with Debian Chromium:
//   node playwright.cjs save <members base> <password> <file>
//     signs in at /members/login and saves context.storageState to <file>;
//   node playwright.cjs load <members base> <file>
//     opens /members/home with <file> as the context's storageState and
//     prints the greeting and theme lines as JSON.
const path = require('node:path');
const modules = path.resolve(__dirname, '../../../infra/node/node_modules');
const { chromium } = require(path.join(modules, 'playwright-core'));

const [mode, base, a, b] = process.argv.slice(2);
const root = typeof process.getuid === 'function' && process.getuid() === 0;

(async () => {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: root ? ['--no-sandbox'] : [],
  });
  try {
    if (mode === 'save') {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(base + '/members/login');
      await page.getByRole('textbox', { name: 'Username' }).fill('grace');
      await page.getByLabel('Password').fill(a);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL('**/members/home');
      await page.locator('#theme').filter({ hasText: 'Theme: dark' }).waitFor();
      await context.storageState({ path: b });
      console.log('saved');
    } else if (mode === 'load') {
      const context = await browser.newContext({ storageState: a });
      const page = await context.newPage();
      await page.goto(base + '/members/home');
      const greet = (await page.locator('#greet').count()) ? await page.locator('#greet').innerText() : null;
      const theme = (await page.locator('#theme').count()) ? await page.locator('#theme').innerText() : null;
      console.log(JSON.stringify({ url: page.url(), greet, theme }));
    } else {
      throw new Error('mode is save or load');
    }
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
