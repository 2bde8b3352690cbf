// Browser test of what tells a signed-in human that something awaits their decision (issue 29):
// the document title's count, visible from a background tab, and the browser's Notification API,
// one notification per new execution gate or final approval, never twice for one item (not after
// a reconnect and its replay either); the permission is asked only from the Approvals view's
// button, never at load. Drives Debian's /usr/bin/chromium through playwright-core and prints
// `end2end notify: N passed, N failed`.
//
// Against BASE_URL with DEV_TOKEN (a `weave-console serve` with the §22 demo, started fresh: its
// execution gate must open after the console's page does), or, without BASE_URL, a server of its own
// (WEAVE_BIN, default target/debug/weave-console) on a fresh data directory.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const TIMEOUT_MS = 30_000;
// The demo runs in real time: its first execution gate opens a while after the start.
const DEMO_MS = 240_000;

function check(cond, message) {
  if (!cond) throw new Error(message);
}

/// A server of our own: its base URL, token and a stop function.
async function ownServer() {
  const bin = process.env.WEAVE_BIN || join(here, '..', 'target', 'debug', 'weave-console');
  const data = mkdtempSync(join(tmpdir(), 'weave-notify-'));
  const token = randomBytes(32).toString('base64url');
  const child = spawn(bin, ['serve', '--addr', '127.0.0.1:0', '--data', data], {
    env: { ...process.env, WEAVE_DEV_TOKEN: token },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const lines = createInterface({ input: child.stdout });
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server did not listen within 60 s')), 60_000);
    child.on('exit', (code) => reject(new Error(`the server exited: ${code}`)));
    lines.on('line', (line) => {
      const m = /listening on (http:\/\/\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
  return {
    base: `${base}/`,
    token,
    stop: () => {
      child.kill('SIGTERM');
      rmSync(data, { recursive: true, force: true });
    },
  };
}

// Every `new Notification(…)` is recorded (Chromium headless may show none), then made.
const RECORD = `
  window.__notices = [];
  const Original = window.Notification;
  if (Original) {
    const Recorded = function (title, options) {
      window.__notices.push({ title, body: options && options.body, tag: options && options.tag });
      try { return new Original(title, options); } catch (e) { return {}; }
    };
    Object.defineProperty(Recorded, 'permission', { get: () => Original.permission });
    Recorded.requestPermission = (...a) => Original.requestPermission(...a);
    window.Notification = Recorded;
  }
`;

async function signIn(page, base, token) {
  await page.goto(new URL(`/join#token=${encodeURIComponent(token)}&name=mission-owner`, base).href, { waitUntil: 'load' });
  await page.locator('#generate-form').waitFor({ state: 'visible', timeout: TIMEOUT_MS });
  const pass = 'correct horse battery staple';
  await page.fill('#pass1', pass);
  await page.fill('#pass2', pass);
  await page.click('#generate');
  await page.locator('#key-unlocked').waitFor({ state: 'visible', timeout: TIMEOUT_MS });
  await page.locator('#sign-in-status .state.ok').waitFor({ timeout: TIMEOUT_MS });
}

async function go(page, letter) {
  await page.keyboard.press('Escape');
  await page.locator('body').click({ position: { x: 2, y: 2 } }).catch(() => {});
  await page.keyboard.press('g');
  await page.keyboard.press(letter);
  await page.waitForTimeout(300);
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('a background tab\'s title counts what awaits; one notification per new gate, none again after a reconnect', async (browser, server) => {
  const context = await browser.newContext({ locale: 'en-US' });
  await context.grantPermissions(['notifications'], { origin: new URL(server.base).origin });
  await context.addInitScript(RECORD);
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`page error: ${e.message}`));
  await signIn(page, server.base, server.token);
  await go(page, 'a');
  await page.locator('#conn-status[data-state="connected"]').waitFor({ timeout: 90_000 });
  check(/Notifications are on/.test(await page.locator('.notify-permission').innerText()),
    'the Approvals view says notifications are on');
  // Another tab in front: the console's is in the background.
  const front = await context.newPage();
  await front.goto('about:blank');
  await front.bringToFront();
  const hidden = await page.evaluate(() => document.visibilityState);
  // The title of the background tab carries the count once the gate opens.
  await page.waitForFunction(() => /^\(\d+\) MissionWeave console$/.test(document.title), null, { timeout: DEMO_MS });
  const title = await page.title();
  const count = Number(/^\((\d+)\)/.exec(title)[1]);
  check(count >= 1, `title ${title}`);
  await page.waitForFunction(() => window.__notices.some((n) => n.tag && n.tag.startsWith('gate ')), null, { timeout: TIMEOUT_MS });
  const notices = await page.evaluate(() => window.__notices);
  const gates = notices.filter((n) => n.tag.startsWith('gate '));
  check(gates.length >= 1, `no gate notification: ${JSON.stringify(notices)}`);
  const g = gates[0];
  check(/^Execution gate: /.test(g.title) && g.title.length > 'Execution gate: '.length, `title ${g.title}`);
  check(/the ownership lease ends/.test(g.body), `the lease countdown: ${g.body}`);
  const tags = notices.map((n) => n.tag);
  check(new Set(tags).size === tags.length, `an item announced twice: ${JSON.stringify(tags)}`);
  // The count in the title is what the Approvals view lists as the human's to decide.
  const listed = await page.locator('li.approval-item .viewer-decision[data-decision="may"]').count();
  check(listed === count, `title count ${count}, ${listed} items the human may decide`);
  // A reconnect (the socket drops, then resumes with a replay): nothing announced again.
  await context.setOffline(true);
  await page.waitForTimeout(2000);
  await context.setOffline(false);
  await page.locator('#conn-status[data-state="connected"]').waitFor({ timeout: 90_000 });
  await page.waitForTimeout(2000);
  const after = await page.evaluate(() => window.__notices);
  const again = after.map((n) => n.tag);
  check(new Set(again).size === again.length, `announced again after the reconnect: ${JSON.stringify(again)}`);
  check(page.problems.length === 0, page.problems.join('; '));
  console.log(`  (background tab: visibilityState ${hidden}, title "${title}", ${after.length} notification(s): ${after.map((n) => n.title).join(' | ')})`);
  await context.close();
});

test('the permission is asked from the Approvals view\'s button, with its reason, never at load', async (browser, server) => {
  const context = await browser.newContext({ locale: 'en-US' });
  const page = await context.newPage();
  let asked = 0;
  await page.exposeFunction('__asked', () => { asked += 1; });
  await page.addInitScript(`
    if (window.Notification) {
      const ask = window.Notification.requestPermission.bind(window.Notification);
      window.Notification.requestPermission = (...a) => { window.__asked(); return ask(...a); };
    }
  `);
  await page.goto(server.base, { waitUntil: 'load' });
  await page.waitForTimeout(1500);
  check(asked === 0, 'the permission was asked at load');
  await page.goto(new URL('/approvals', server.base).href, { waitUntil: 'load' });
  const button = page.locator('button.notify-enable');
  await button.waitFor({ timeout: TIMEOUT_MS });
  check(asked === 0, 'the permission was asked before the click');
  const why = await page.locator('#notify-why').innerText();
  check(/background/.test(why) && /ownership lease/.test(why), `the reason: ${why}`);
  await button.click();
  await page.waitForTimeout(500);
  check(asked === 1, `asked ${asked} times on one click`);
  await context.close();
});

const server = process.env.BASE_URL
  ? { base: process.env.BASE_URL, token: process.env.DEV_TOKEN || '', stop: () => {} }
  : await ownServer();
process.on('exit', () => server.stop());
const browser = await chromium.launch({
  executablePath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
});
let passed = 0;
let failed = 0;
for (const t of tests) {
  try {
    await t.fn(browser, server);
    passed += 1;
    console.log(`ok   ${t.name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${t.name}: ${e.message}`);
  }
}
await browser.close();
console.log(`end2end notify: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
