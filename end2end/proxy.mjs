// The console through the proxy (issue 26, "the console against any authority"):
// `weave-console serve --upstream ws://…/ws --registry-from-upstream` in front of a second
// weave-console running the demo. A person brings an existing key (the demo MissionOwner's
// 32-byte seed, as an operator would hand it over), the console seals it at once, finds its
// identity in the Registry relayed from the upstream, connects through the proxy and grants
// the first execution gate through the signing summary; the upstream accepts it.
//
// PROXY_URL: the proxy's base URL; UPSTREAM_DATA: the upstream's data directory (its
// organization.json holds the demo's keys; scripts/test.sh sets both).
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const resultsDir = join(here, 'test-results');
const TIMEOUT_MS = 30_000;
// The demo runs in real time: its first execution gate comes a while after the start.
const DEMO_MS = 240_000;
const proxyUrl = process.env.PROXY_URL || '';
const upstreamData = process.env.UPSTREAM_DATA || '';
if (!proxyUrl || !upstreamData) {
  console.error('end2end proxy: PROXY_URL and UPSTREAM_DATA are not set (scripts/test.sh sets them)');
  console.log('end2end proxy: 0 passed, 1 failed');
  process.exit(1);
}
const url = (path) => new URL(path, proxyUrl).href;
const launchArgs = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
  '--no-first-run', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
];

function check(cond, message) {
  if (!cond) throw new Error(message);
}

/// The demo MissionOwner's seed, as its operator would hand it over (base64url, 32 bytes).
function ownerSeed() {
  const org = JSON.parse(readFileSync(join(upstreamData, 'organization.json'), 'utf8'));
  const owner = org.principals.find((p) => p.name === 'mission-owner');
  check(owner && typeof owner.seed === 'string', 'no mission-owner in the upstream organization.json');
  return { seed: owner.seed, keyId: owner.keyId };
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('through the proxy: an imported key signs in and grants the first execution gate upstream', async (browser) => {
  mkdirSync(resultsDir, { recursive: true });
  const context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  const sent = [];
  page.on('request', (r) => { if (r.method() !== 'GET') sent.push(r.postData() || ''); });
  const { seed, keyId } = ownerSeed();
  await page.goto(url('/sign-in'), { waitUntil: 'load', timeout: TIMEOUT_MS });
  await page.locator('#existing-form').waitFor({ state: 'visible', timeout: TIMEOUT_MS });
  // The Registry relayed from the upstream is the one the key is looked up in.
  await page.waitForFunction(async () => (await fetch('/api/registry')).ok, null, { timeout: TIMEOUT_MS });
  // A wrong text first: refused plainly, nothing stored.
  await page.fill('#existing-key', 'not a key');
  await page.fill('#existing-pass1', 'correct horse battery staple');
  await page.fill('#existing-pass2', 'correct horse battery staple');
  await page.click('#import-existing');
  await page.locator('#sign-in-status .state.error').waitFor({ timeout: TIMEOUT_MS });
  check(/not a key the console reads/.test(await page.locator('#sign-in-status').innerText()), 'a wrong key is not refused plainly');
  check(await page.inputValue('#existing-pass1') === '', 'the passphrase stays in the form');
  // The seed: sealed, found in the Registry, unlocked.
  await page.fill('#existing-key', seed);
  await page.fill('#existing-pass1', 'correct horse battery staple');
  await page.fill('#existing-pass2', 'correct horse battery staple');
  await page.click('#import-existing');
  await page.locator('#key-unlocked').waitFor({ state: 'visible', timeout: TIMEOUT_MS });
  const heldKey = (await page.locator('#key-held dd code').first().innerText()).trim();
  check(heldKey === keyId, `the imported key's identity: ${heldKey}, expected ${keyId}`);
  check(!sent.some((b) => b.includes(seed)), 'the seed was sent to a server');
  await page.locator('#conn-status[data-state="connected"]').waitFor({ timeout: 60_000 });

  // The first execution gate, upstream, decided through the proxy.
  await page.locator('header nav a[href="/approvals"]').click();
  const gate = page.locator('li.approval-item[data-kind="gate"]').first();
  await gate.waitFor({ timeout: DEMO_MS });
  await gate.locator('input.operation[value="deploy"]').check();
  await gate.locator('button.grant-execution').click();
  const dialog = page.locator('.dialog.signing');
  await dialog.waitFor({ timeout: TIMEOUT_MS });
  check((await dialog.innerText()).includes('approval.grant_execution'), 'the signing summary names the decision');
  await dialog.locator('button[aria-expanded]').click();
  const doc = JSON.parse(await dialog.locator('pre.canonical').innerText());
  await dialog.locator('button.primary').click();
  await dialog.waitFor({ state: 'detached', timeout: TIMEOUT_MS });
  const row = page.locator(`#sent li[data-action-id="${doc.actionId}"]`);
  await page.locator(`#sent li[data-action-id="${doc.actionId}"][data-state="accepted"]`).waitFor({ timeout: TIMEOUT_MS });
  check(/approval\.execution\.granted/.test(await row.innerText()), 'the upstream granted it');
  await page.screenshot({ path: join(resultsDir, 'proxy-gate-granted-en.png'), fullPage: true });
  check(problems.length === 0, problems.join('; '));
  await context.close();
});

let passed = 0;
let failed = 0;
let browser;
try {
  browser = await chromium.launch({ executablePath, headless: true, args: launchArgs, timeout: TIMEOUT_MS });
  for (const t of tests) {
    const start = Date.now();
    try {
      await t.fn(browser);
      passed += 1;
      console.log(`ok: ${t.name} (${Date.now() - start} ms)`);
    } catch (e) {
      failed += 1;
      console.error(`FAIL: ${t.name}: ${e && e.message ? e.message : e}`);
    }
  }
} catch (e) {
  failed += 1;
  console.error(`FAIL: cannot run the browser: ${e && e.message ? e.message : e}`);
} finally {
  if (browser) await browser.close().catch(() => {});
}
console.log(`end2end proxy: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
