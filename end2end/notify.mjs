// Browser test of what tells a signed-in human that something awaits their decision (issue 29):
// the document title's count, seen from a tab that is really in the background
// (`document.visibilityState` 'hidden'), and the browser's Notification API, one notification per
// new execution gate or final approval, shown by the browser (its `show` event) while the tab is
// hidden, with the Mission, the goal and the ownership lease's countdown, never twice for one item
// (not after a reconnect and its replay either); the permission is asked only from the Approvals
// view's button, never at load. Drives Debian's /usr/bin/chromium through playwright-core and
// prints `end2end notify: N passed, N failed`.
//
// A background tab: Playwright's own browser contexts emulate focus on every page (CDP
// `Emulation.setFocusEmulationEnabled`), and a page so emulated stays 'visible' behind another
// tab, in a minimised window, or frozen and thawed (docs/notifications.md says what was tried). So Chromium is started here (headless, `--remote-debugging-port=0`) and
// joined over CDP with `noDefaults`: pages of its default context get no such override, and
// the console's tab, once another tab of the same window is brought to the front, is hidden
// (`visibilitychange` fires; its timers are throttled as a real background tab's are).
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
import { TIMEOUT_MS, check, executablePath, go, launchArgs, signIn } from './support.mjs';

const here = dirname(fileURLToPath(import.meta.url));
// The demo runs in real time: its first execution gate opens a while after the start.
const DEMO_MS = 240_000;
const CONSOLE_TITLE = 'MissionWeave console';

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

/// Chromium started here and joined over CDP with `noDefaults` (see the top of this file): the
/// browser, its default context (whose tabs can be hidden) and a stop function.
async function backgroundableBrowser() {
  const profile = mkdtempSync(join(tmpdir(), 'weave-notify-chromium-'));
  const child = spawn(executablePath, [
    ...launchArgs, '--lang=en-US', '--remote-debugging-port=0', `--user-data-dir=${profile}`, 'about:blank',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  process.on('exit', () => child.kill('SIGKILL'));
  const endpoint = await new Promise((resolve, reject) => {
    let said = '';
    const timer = setTimeout(() => reject(new Error(`Chromium gave no DevTools endpoint within 30 s: ${said.slice(-500)}`)), TIMEOUT_MS);
    child.on('exit', (code) => reject(new Error(`Chromium exited: ${code}: ${said.slice(-500)}`)));
    child.stderr.on('data', (d) => {
      said += d;
      const m = /DevTools listening on (ws:\S+)/.exec(said);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
  const browser = await chromium.connectOverCDP(endpoint, { noDefaults: true, timeout: TIMEOUT_MS });
  return {
    browser,
    context: browser.contexts()[0],
    stop: async () => {
      await browser.close().catch(() => {});
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r()));
      // Chromium's helper processes may still write into the profile for a moment after the
      // browser exits (seen in CI: ENOTEMPTY): retried, and a leftover temporary directory is
      // reported, not taken for a failed test.
      try {
        rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
      } catch (e) {
        console.log(`  (the temporary Chromium profile ${profile} was not removed: ${e.code || e})`);
      }
    },
  };
}

// Every `new Notification(…)` is recorded (with the page's visibility then, and whether the
// browser showed it: its `show` event), then made; every visibility change too.
const RECORD = `
  window.__notices = [];
  window.__visibility = [document.visibilityState];
  document.addEventListener('visibilitychange', () => window.__visibility.push(document.visibilityState));
  const Original = window.Notification;
  if (Original) {
    const Recorded = function (title, options) {
      const notice = { title, body: options && options.body, tag: options && options.tag, visibility: document.visibilityState, shown: false };
      window.__notices.push(notice);
      try {
        const n = new Original(title, options);
        n.addEventListener('show', () => { notice.shown = true; });
        return n;
      } catch (e) { notice.error = String(e); return {}; }
    };
    Object.defineProperty(Recorded, 'permission', { get: () => Original.permission });
    Recorded.requestPermission = (...a) => Original.requestPermission(...a);
    window.Notification = Recorded;
  }
`;

/// Waits until `fn` (evaluated in the page) is truthy, asking from Node every half second: a
/// hidden tab runs no animation frames and throttles its timers, so Playwright's in-page polling
/// would measure the throttling, not the console.
async function until(page, fn, timeout, what) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const got = await page.evaluate(fn);
    if (got) return got;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeout} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('a hidden tab\'s title counts what awaits; one notification per new gate, with its Mission, goal and lease countdown; none again after a reconnect', async (chrome, server) => {
  const context = chrome.context;
  await context.grantPermissions(['notifications'], { origin: new URL(server.base).origin });
  await context.addInitScript(RECORD);
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`page error: ${e.message}`));
  await signIn(page, { base: server.base, token: server.token });
  await go(page, 'a');
  await page.locator('#conn-status[data-state="connected"]').waitFor({ timeout: 90_000 });
  check(/Notifications are on/.test(await page.locator('.notify-permission').innerText()),
    'the Approvals view says notifications are on');
  // Another tab of the same window in front: the console's tab is hidden, before any gate opens.
  const front = await context.newPage();
  await front.goto('about:blank');
  await front.bringToFront();
  await until(page, () => document.visibilityState === 'hidden', TIMEOUT_MS, 'the console\'s tab hidden');
  const before = await page.evaluate(() => ({ title: document.title, notices: window.__notices.length, visibility: window.__visibility }));
  check(before.title === CONSOLE_TITLE && before.notices === 0,
    `something already awaited when the tab went to the background (the gate must open later): ${JSON.stringify(before)}`);
  // The title of the hidden tab carries the count once the gate opens.
  const title = await until(page, () => /^\(\d+\) /.test(document.title) && document.title, DEMO_MS, 'a count in the title');
  check(title.endsWith(` ${CONSOLE_TITLE}`), `title ${title}`);
  const count = Number(/^\((\d+)\)/.exec(title)[1]);
  check(count >= 1, `title ${title}`);
  await until(page, () => window.__notices.some((n) => n.tag && n.tag.startsWith('gate ') && n.shown), TIMEOUT_MS, 'a gate notification shown');
  check(await page.evaluate(() => document.visibilityState) === 'hidden', 'the tab stayed hidden until the notification');
  const notices = await page.evaluate(() => window.__notices);
  const gates = notices.filter((n) => n.tag.startsWith('gate '));
  for (const n of notices) {
    check(n.visibility === 'hidden' && n.shown && !n.error, `a notification not shown by the browser, or not from the hidden tab: ${JSON.stringify(n)}`);
  }
  // Each gate the Approvals view lists as the human's to decide: exactly one notification, which
  // names its Mission, its goal and the ownership lease's countdown.
  const items = await page.locator('li.approval-item[data-kind="gate"]:has(.viewer-decision[data-decision="may"])').evaluateAll((lis) => lis.map((li) => ({
    mission: li.querySelector('h2 span[translate="no"]').textContent.trim(),
    goal: li.querySelector('.goal').textContent.trim(),
    workItem: li.querySelector('code.work-item').textContent.trim(),
  })));
  check(items.length >= 1, 'no gate awaits the human in the Approvals view');
  for (const item of items) {
    const mine = gates.filter((n) => n.tag.startsWith(`gate ${item.workItem} `));
    check(mine.length === 1, `${mine.length} notifications for the gate of ${item.workItem}: ${JSON.stringify(gates)}`);
    const [g] = mine;
    check(g.title === `Execution gate: ${item.mission}`, `the notification's title ${g.title}, the Mission ${item.mission}`);
    check(g.body.startsWith(`${item.goal} — the ownership lease ends `), `the notification's body ${g.body}, the goal ${item.goal}`);
    // The countdown as the browser words it (Intl.RelativeTimeFormat: "in 4 min.", "tomorrow"),
    // still ahead: the lease has not run out.
    const lease = g.body.slice(`${item.goal} — the ownership lease ends `.length);
    check(lease.length > 1 && !/ago/.test(lease), `the lease countdown: ${g.body}`);
  }
  check(gates.length === items.length, `${gates.length} gate notifications for ${items.length} gates`);
  const tags = notices.map((n) => n.tag);
  check(new Set(tags).size === tags.length, `an item announced twice: ${JSON.stringify(tags)}`);
  // The count in the title is what the Approvals view lists as the human's to decide.
  const listed = await page.locator('li.approval-item .viewer-decision[data-decision="may"]').count();
  check(listed === count, `title count ${count}, ${listed} items the human may decide`);
  // A reconnect while hidden (the socket drops, then resumes with a replay): nothing announced again.
  await context.setOffline(true);
  await page.waitForTimeout(2000);
  await context.setOffline(false);
  await page.locator('#conn-status[data-state="connected"]').waitFor({ timeout: 90_000 });
  await page.waitForTimeout(2000);
  const after = await page.evaluate(() => window.__notices);
  const again = after.map((n) => n.tag);
  check(new Set(again).size === again.length, `announced again after the reconnect: ${JSON.stringify(again)}`);
  // In front again: visible, the same count.
  await page.bringToFront();
  await until(page, () => document.visibilityState === 'visible', TIMEOUT_MS, 'the console\'s tab visible again');
  const visibility = await page.evaluate(() => window.__visibility);
  check(page.problems.length === 0, page.problems.join('; '));
  console.log(`  (visibility ${visibility.join(' → ')}; title "${title}" while hidden; ${after.length} notification(s), shown by the browser while hidden: ${after.map((n) => `${n.title} / ${n.body}`).join(' | ')})`);
  await front.close();
  await page.close();
});

test('the permission is asked from the Approvals view\'s button, with its reason, never at load', async (chrome, server) => {
  const context = await chrome.browser.newContext({ locale: 'en-US' });
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
const chrome = await backgroundableBrowser();
let passed = 0;
let failed = 0;
for (const t of tests) {
  try {
    await t.fn(chrome, server);
    passed += 1;
    console.log(`ok   ${t.name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${t.name}: ${e.message}`);
  }
}
await chrome.stop();
console.log(`end2end notify: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
