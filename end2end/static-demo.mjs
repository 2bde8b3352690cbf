// Browser test of the static demo (issue 30, docs/static-demo.md): `scripts/build-web.sh demo`'s
// dist-demo/ served by a plain static file server of this file (Node's http module: files and
// MIME types, nothing of weave-console), opened in Debian's Chromium through playwright-core.
// The page starts the in-memory authority node in a module Web Worker under the console's CSP
// (a meta tag: no inline script, WebAssembly under 'wasm-unsafe-eval' only); the demo runs to
// its first execution gate and waits there; the pace control pauses the demo's clock; the page
// says it is an in-browser authority, in the three languages; axe finds no serious or critical
// violation. Prints the time from navigation to the first execution gate at the default pace
// (real time) and at the fastest, and `end2end static-demo: N passed, N failed`.
//
// DIST (default dist-demo) is the folder to serve; build it first with scripts/build-web.sh demo.
// With BASE_URL the folder is already served there (e.g. `python3 -m http.server -d dist-demo`)
// and this file starts no server.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';

const here = dirname(fileURLToPath(import.meta.url));
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const root = resolve(process.env.DIST || join(here, '..', 'dist-demo'));
// Real time: the demo's first execution gate opens about 12 s of demo time after the start.
const GATE_MS = 90_000;

function check(cond, message) {
  if (!cond) throw new Error(message);
}

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.wasm': 'application/wasm',
};

/// A plain static file server on loopback: GET of a file under `root`, nothing else.
async function staticServer() {
  const server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    const file = join(root, path.endsWith('/') ? `${path}index.html` : path);
    if (!file.startsWith(root) || req.method !== 'GET') {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] || 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { base: `http://127.0.0.1:${server.address().port}/`, stop: () => server.close() };
}

const tests = [];
function test(name, fn) {
  tests.push({ name, fn });
}

/// Opens the page; collects page errors, console errors and CSP violations.
async function open(browser, base, locale = 'en-US') {
  const context = await browser.newContext({ locale });
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') page.problems.push(`console: ${m.text()}`);
  });
  page.started = Date.now();
  await page.goto(base);
  return { context, page };
}

async function firstGate(page, timeout) {
  await page.waitForFunction(() => Number(document.body.dataset.gates || 0) > 0, null, { timeout });
  return Date.now() - page.started;
}

test('the demo runs in a Worker to its first execution gate and waits there (real time)', async (browser, base) => {
  const { context, page } = await open(browser, base);
  const ms = await firstGate(page, GATE_MS);
  console.log(`     first execution gate at the default pace (real time): ${ms} ms after navigation`);
  const gates = await page.locator('#gates li').allTextContents();
  check(gates.some((g) => /execution approval of WorkItem/.test(g)), `no execution gate listed: ${gates}`);
  check(page.problems.length === 0, page.problems.join('; '));
  await context.close();
});

test('at the fastest pace the gate comes sooner, and the demo still waits for the human', async (browser, base) => {
  const { context, page } = await open(browser, base);
  await page.click('button[data-pace="max"]');
  const ms = await firstGate(page, GATE_MS);
  console.log(`     first execution gate at the fastest pace: ${ms} ms after navigation`);
  // Nobody decides: the gate is still there after a while at the fastest pace.
  const key = await page.locator('#gates li').first().getAttribute('data-key');
  await page.waitForTimeout(1500);
  const keys = await page.locator('#gates li').evaluateAll((ls) => ls.map((l) => l.dataset.key));
  check(keys.includes(key), `the gate ${key} went away without a decision: ${keys}`);
  check(page.problems.length === 0, page.problems.join('; '));
  await context.close();
});

test('pause stops the demo clock, and the page says what it is', async (browser, base) => {
  const { context, page } = await open(browser, base);
  await page.waitForFunction(() => document.getElementById('clock').textContent !== '—');
  await page.click('button[data-pace="0"]');
  await page.waitForFunction(() => /paused/.test(document.getElementById('factor').textContent));
  const before = await page.locator('#clock').textContent();
  await page.waitForTimeout(2500);
  const after = await page.locator('#clock').textContent();
  check(before === after, `the clock moved while paused: ${before} → ${after}`);
  check(/in-browser authority for demonstration/.test(await page.locator('.notice').textContent()), 'no notice');
  check(page.problems.length === 0, page.problems.join('; '));
  await context.close();
});

test('French and Traditional Chinese; axe finds no serious or critical violation', async (browser, base) => {
  const found = [];
  for (const [locale, notice] of [['en-US', /demonstration/], ['fr-FR', /démonstration/], ['zh-TW', /示範/]]) {
    const { context, page } = await open(browser, base, locale);
    await page.waitForFunction(() => document.getElementById('clock').textContent !== '—');
    check(notice.test(await page.locator('.notice').textContent()), `${locale}: the notice is not translated`);
    const result = await new AxeBuilder({ page }).analyze();
    for (const v of result.violations) {
      if (v.impact === 'serious' || v.impact === 'critical') found.push(`${locale}: ${v.id} (${v.impact})`);
    }
    check(page.problems.length === 0, `${locale}: ${page.problems.join('; ')}`);
    await context.close();
  }
  check(found.length === 0, found.join('\n  '));
});

const server = process.env.BASE_URL ? { base: process.env.BASE_URL, stop: () => {} } : await staticServer();
const browser = await chromium.launch({
  executablePath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
});
let passed = 0;
let failed = 0;
for (const t of tests) {
  try {
    await t.fn(browser, server.base);
    passed += 1;
    console.log(`ok   ${t.name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${t.name}: ${e.message}`);
  }
}
await browser.close();
server.stop();
console.log(`end2end static-demo: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
