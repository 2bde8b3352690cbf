// Browser smoke test of the MissionWeave console.
// Starts nothing itself: point it at a running `weave-console serve` with BASE_URL
// (default http://127.0.0.1:8080/). Drives Debian's /usr/bin/chromium through playwright-core
// (never a browser download), and prints one summary line: `end2end: N passed, N failed`.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const baseUrl = process.env.BASE_URL || process.argv[2] || 'http://127.0.0.1:8080/';
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const resultsDir = join(here, 'test-results');
const TIMEOUT_MS = 30_000;

const launchArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

async function smoke(browser) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  const response = await page.goto(baseUrl, { waitUntil: 'load', timeout: TIMEOUT_MS });
  if (!response || !response.ok()) {
    throw new Error(`GET ${baseUrl} -> ${response ? response.status() : 'no response'}`);
  }
  const title = await page.title();
  if (title !== 'MissionWeave console') {
    throw new Error(`title is ${JSON.stringify(title)}, expected "MissionWeave console"`);
  }
  // What a person sees: the three official bundles, all passing, with their counts.
  const status = page.locator('#core-status[data-state]');
  await status.waitFor({ state: 'visible', timeout: TIMEOUT_MS });
  const text = (await status.textContent())?.trim() ?? '';
  if (text !== 'Protocol core: all 150 official evaluations pass') {
    throw new Error(`#core-status text is ${JSON.stringify(text)}`);
  }
  const expected = { structural: ['58', '0'], cryptography: ['62', '0'], admission: ['30', '0'] };
  for (const [bundle, [p, f]] of Object.entries(expected)) {
    const cells = await page.locator(`#core-bundles tr[data-bundle="${bundle}"] td`).allTextContents();
    if (cells[1] !== p || cells[2] !== f) {
      throw new Error(`${bundle} row shows ${JSON.stringify(cells)}, expected ${p} passed, ${f} failed`);
    }
  }
  if ((await page.locator('#core-failures li').count()) !== 0) {
    throw new Error('failures are listed on a passing run');
  }
  // The stylesheet must be served (under /style) and applied.
  const css = await page.request.get(new URL('/style/console.css', baseUrl).href);
  if (!css.ok()) throw new Error(`GET /style/console.css -> ${css.status()}`);
  mkdirSync(resultsDir, { recursive: true });
  await page.screenshot({ path: join(resultsDir, 'smoke.png'), fullPage: true });
  if (errors.length) throw new Error(errors.join('; '));
}

let passed = 0;
let failed = 0;
let browser;
try {
  browser = await chromium.launch({
    executablePath,
    headless: true,
    args: launchArgs,
    timeout: TIMEOUT_MS,
  });
  await smoke(browser);
  passed += 1;
  console.log(`ok: console page at ${baseUrl} (screenshot end2end/test-results/smoke.png)`);
} catch (e) {
  failed += 1;
  console.error(`FAIL: console page at ${baseUrl}: ${e && e.message ? e.message : e}`);
} finally {
  if (browser) await browser.close().catch(() => {});
}
console.log(`end2end: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
