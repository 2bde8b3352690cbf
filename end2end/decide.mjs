// Browser tests of the console's write side (issue 13, view 4: the Approval queue), against a
// running `weave-console serve` with the §22 demo (BASE_URL, default http://127.0.0.1:8080/).
// Drives Debian's /usr/bin/chromium through playwright-core and prints
// `end2end decide: N passed, N failed`. Screenshots go to end2end/test-results/.
//
// One browser key is generated for the demo's MissionOwner; then, in the Approvals view: who may
// decide is shown before any click; the execution gate is granted (the signing summary and its
// canonical JSON first) and the authority accepts it, with the stored Approval verified again;
// a change request whose signature is tampered with on the wire (Playwright's WebSocket route)
// is refused with its wire code and the typed comment stays; the same request, untampered, is
// accepted; an Artifact of the final approval is fetched and verified (its content, hashed in the
// browser, shown as text) and altered bytes on the wire raise the alarm with nothing shown; the
// final approvals of both demo Missions are accepted; axe-core finds no serious or critical
// violation on the Approvals view in en, fr and zh-Hant.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';
import { TIMEOUT_MS, check, executablePath, go, launchArgs, signIn } from './support.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const baseUrl = process.env.BASE_URL || process.argv[2] || 'http://127.0.0.1:8080/';
const resultsDir = join(here, 'test-results');
// The demo runs in real time: its Missions reach their submissions a while after the gate.
const DEMO_MS = 240_000;
// The enrolment token the server printed at start (scripts/test.sh exports it): the sign-in goes
// through the join link with it. Without it nothing can be enrolled: refuse to start.
const DEV_TOKEN = process.env.DEV_TOKEN || '';
if (!DEV_TOKEN) {
  console.error('end2end decide: DEV_TOKEN is not set: export the enrolment token the server printed at start (scripts/test.sh does)');
  console.log('end2end decide: 0 passed, 1 failed');
  process.exit(1);
}
const LOCALES = ['en', 'fr', 'zh-Hant'];
// The goals of the demo's WorkItems (simulation/src/agents/plan.rs): a Worker's Artifact
// content starts with its WorkItem's goal.
const GOALS = [
  'Threat model of the payment flow',
  'Audit third-party dependencies',
  'Security review of the checkout service (child Mission)',
  'Urgent review of the session-fixation hot-fix',
  'Requirements analysis for checkout',
  'Implement the checkout service',
  'Test the checkout service',
  'Code review of the checkout service',
  'Deploy the checkout service to staging',
  'Address the MissionOwner\'s change request',
  'Requirements analysis for search',
  'Implement the indexer',
  'Test the indexer',
  'Code review of the indexer',
  'Enable the nightly index build',
  'Document the payment provider\'s API schema',
];

async function axe(page, label, found) {
  const result = await new AxeBuilder({ page }).analyze();
  for (const v of result.violations) {
    if (v.impact === 'serious' || v.impact === 'critical') {
      found.push(`${label}: axe ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
    }
  }
}

/// Signs what the open signing dialog shows; checks the dialog first.
async function signDialog(page, kind) {
  const dialog = page.locator('.dialog.signing');
  await dialog.waitFor({ timeout: TIMEOUT_MS });
  const text = await dialog.innerText();
  check(text.includes(kind), `the signing summary names ${kind}: ${text.slice(0, 200)}`);
  await dialog.locator('button[aria-expanded]').click();
  const canonical = await dialog.locator('pre.canonical').innerText();
  const doc = JSON.parse(canonical);
  check(doc.kind === kind && !('signature' in doc) && !('sessionEpoch' in doc) && Number.isInteger(doc.membershipEpoch),
    `canonical JSON: ${canonical.slice(0, 200)}`);
  await dialog.locator('button.primary').click();
  await dialog.waitFor({ state: 'detached', timeout: TIMEOUT_MS });
  return doc;
}

/// Waits for the outcome of the decision with this Action ID in the "Your decisions" list.
async function outcome(page, actionId, state, timeout = TIMEOUT_MS) {
  const row = page.locator(`#sent li[data-action-id="${actionId}"]`);
  try {
    await page.locator(`#sent li[data-action-id="${actionId}"][data-state="${state}"]`).waitFor({ timeout });
  } catch (e) {
    const now = await row.innerText().catch(() => '(no row)');
    throw new Error(`${actionId} is not ${state}: ${now}`);
  }
  return row;
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('approvals: gate granted, tampered change request refused, changes requested, both Missions approved, axe in every locale', async (browser) => {
  mkdirSync(resultsDir, { recursive: true });
  const context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`page error: ${e.message}`));
  // Every console WebSocket goes through the test, which can tamper with the next COMMAND.
  let tamper = null; // a Command kind whose next frame gets a forged signature
  let tampered = 0;
  await page.routeWebSocket(/\/ws/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((message) => {
      if (tamper && typeof message === 'string' && message.includes('"frameType":"COMMAND"')) {
        const frame = JSON.parse(message);
        if (frame.command && frame.command.kind === tamper) {
          const v = frame.command.signature.value;
          // Flip one base64url character of the signature: same length, different bytes.
          const flipped = (v[5] === 'A' ? 'B' : 'A');
          frame.command.signature.value = v.slice(0, 5) + flipped + v.slice(6);
          tamper = null;
          tampered += 1;
          server.send(JSON.stringify(frame));
          return;
        }
      }
      server.send(message);
    });
    server.onMessage((message) => ws.send(message));
  });
  // The join link the server printed: it fills in the name and the enrolment token.
  await signIn(page, { base: baseUrl, token: DEV_TOKEN });
  await go(page, 'a');
  await page.locator('#conn-status[data-state="connected"]').waitFor({ timeout: 90_000 });

  // The execution gate: who may decide, before any click.
  const gate = page.locator('li.approval-item[data-kind="gate"]').first();
  await gate.waitFor({ timeout: DEMO_MS });
  check((await gate.locator('.viewer-decision').getAttribute('data-decision')) === 'may', 'the MissionOwner may decide the gate');
  const who = await gate.locator('.who').innerText();
  check(/human MissionOwner/.test(who) && /mission-owner/.test(who), `who may decide: ${who}`);
  check(/Ownership Epoch/.test(await gate.innerText()), 'the gate shows its Ownership Epoch');
  // What the human lets run: the Work Contract's goal and allowed tools, and the WorkItem in its
  // Mission's graph (selected there; in-app, so the unlocked key stays).
  const goal = (await gate.locator('.goal').innerText()).trim();
  const gateFacts = await gate.locator('dl.facts').innerText();
  check(goal.length > 5 && /Allowed tools/.test(gateFacts) && /Allowed resources/.test(gateFacts), `the gate's goal and contract: ${gateFacts}`);
  const gateItem = (await gate.locator('code.work-item').innerText()).trim();
  await gate.locator('a.in-graph').click();
  await page.locator(`[data-node-id="${gateItem}"][aria-pressed="true"]`).waitFor({ timeout: TIMEOUT_MS });
  check(await page.locator('.selected-only').isVisible(), 'the gate\'s WorkItem is the one listed');
  check(/Signed in as/.test(await page.locator('header.site').innerText()), 'still signed in after following the gate to its graph');
  await go(page, 'a');
  await gate.waitFor({ timeout: DEMO_MS });

  // axe and a screenshot of the Approvals view in each locale, with an item on screen.
  const found = [];
  for (const tag of LOCALES) {
    await page.selectOption('#lang-select', tag);
    await page.waitForTimeout(300);
    await page.screenshot({ path: join(resultsDir, `decide-approvals-${tag}.png`), fullPage: true });
    await axe(page, `${tag} /approvals`, found);
  }
  await page.selectOption('#lang-select', 'en');

  // Grant it: deploy, the signing summary, Sign; the authority accepts; the stored Approval is
  // verified again with its signing hash.
  await gate.locator('input.operation[value="deploy"]').check();
  await gate.locator('button.grant-execution').click();
  const grant = await signDialog(page, 'approval.grant_execution');
  check(grant.payload.operations.includes('deploy') && Number.isInteger(grant.payload.ownershipEpoch), 'grant payload');
  let row = await outcome(page, grant.actionId, 'accepted');
  let receipt = await row.innerText();
  check(/approval\.execution\.granted/.test(receipt), `receipt: ${receipt}`);
  const storedHash = await row.locator('.stored-hash').innerText();
  check(/^sha256:[0-9a-f]{64}$/.test(storedHash), `stored Approval's signing hash: ${storedHash}`);
  check(/via|live connection/.test(receipt), 'sent over the live connection');
  await page.screenshot({ path: join(resultsDir, 'decide-gate-granted-en.png'), fullPage: true });

  // A final approval: request changes, first with a tampered signature (refused with its wire
  // code, the comment kept), then untampered (accepted).
  const firstFinal = page.locator('li.approval-item[data-kind="final"]').first();
  await firstFinal.waitFor({ timeout: DEMO_MS });
  const missionId = await firstFinal.getAttribute('data-mission');
  const card = page.locator(`li.approval-item[data-kind="final"][data-mission="${missionId}"]`);
  check(/sha256:/.test(await card.locator('.hashes').innerText().catch(() => '')) || /No Artifact/.test(await card.innerText()), 'Artifact hashes shown');
  check(/Evidence/.test(await card.locator('.evidence').innerText()), 'Evidence summary shown');

  // Fetch and verify an Artifact: its content is hashed in the browser and shown, as text, only
  // when it matches its hash; then altered bytes on the wire (Playwright's route) raise the
  // alarm and nothing of them is shown.
  const artifacts = card.locator('li.artifact');
  check((await artifacts.count()) >= 2, `Artifact hashes with fetch-and-verify: ${await artifacts.count()}`);
  // Each hash says what it is, from its manifest in the log: the publishing WorkItem's goal, the
  // media type, the classification and the producer.
  const facts = await artifacts.evaluateAll((lis) => lis.map((li) => ({
    goal: (li.querySelector('.artifact-facts .goal') || {}).textContent || '',
    media: (li.querySelector('.artifact-facts .media-type') || {}).textContent || '',
    producer: (li.querySelector('.artifact-facts code.id') || {}).title || (li.querySelector('.artifact-facts code.id') || {}).textContent || '',
  })));
  check(facts.every((f) => f.goal.length > 5 && /^[a-z]+\/[a-z0-9.+-]+$/.test(f.media) && f.producer.includes(':agent:')),
    `what each Artifact hash is: ${JSON.stringify(facts)}`);
  const first = artifacts.nth(0);
  await first.locator('button.fetch-verify').click();
  await first.locator('.artifact-check.matches, .artifact-check.mismatch, .artifact-check.unavailable').first().waitFor({ timeout: TIMEOUT_MS });
  check((await first.getAttribute('data-check')) === 'matches', `the content matches: ${await first.innerText()}`);
  check(/✓/.test(await first.locator('.artifact-check.matches').innerText()), 'a ✓ mark, in words too');
  const preview = await first.locator('pre.artifact-preview').innerText();
  const goalLine = preview.split('\n')[0];
  check(GOALS.includes(goalLine), `the preview starts with a WorkItem goal the Worker wrote: ${preview.slice(0, 200)}`);
  check(/\nby urn:missionweaveprotocol:agent:/.test(preview), `the preview names its Worker: ${preview.slice(0, 200)}`);
  check((await first.locator('pre.artifact-preview').getAttribute('translate')) === 'no', 'the preview is not translated');
  await first.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(resultsDir, 'decide-artifact-verified-en.png'), fullPage: true });
  await page.route('**/api/artifacts/**', (route) => route.fulfill({
    status: 200,
    contentType: 'text/markdown',
    body: `${goalLine}\nby an impostor\n`,
  }));
  const second = artifacts.nth(1);
  await second.locator('button.fetch-verify').click();
  await second.locator('.artifact-check.mismatch, .artifact-check.matches, .artifact-check.unavailable').first().waitFor({ timeout: TIMEOUT_MS });
  check((await second.getAttribute('data-check')) === 'mismatch', `altered bytes are refused: ${await second.innerText()}`);
  check((await second.locator('.artifact-check.mismatch').getAttribute('role')) === 'alert', 'the mismatch is an alert');
  check(/✗/.test(await second.innerText()) && /does not match/.test(await second.innerText()), 'a ✗ mark, in words too');
  check((await second.locator('pre.artifact-preview').count()) === 0 && !/impostor/.test(await second.innerText()), 'nothing of the altered bytes is shown');
  await second.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(resultsDir, 'decide-artifact-mismatch-en.png'), fullPage: true });
  await page.unroute('**/api/artifacts/**');
  // "Fetch and verify all": every hash not matching yet is fetched again (the altered one
  // included, now whole), and the card says how many match.
  const n = await artifacts.count();
  const all = card.locator('.verify-all');
  const allLabel = (await all.locator('button.fetch-verify-all').innerText()).trim();
  check(allLabel === `Fetch and verify all ${n}`, `the button's label: "${allLabel}"`);
  const leaked = (await page.locator('body').innerText()).match(/[^\n]{0,30}(\bmove \|\||\.get\(\)|\.to_string\(\))[^\n]{0,30}/);
  check(!leaked, `code shown as text on the Approvals view: "${leaked && leaked[0]}"`);
  check((await all.getAttribute('data-ok')) === '1' && (await all.getAttribute('data-bad')) === '1',
    `the tally before: ${await all.getAttribute('data-ok')} / ${await all.getAttribute('data-bad')}`);
  check(/1 of \d+ do not match/.test(await all.locator('.verify-summary').innerText()), `the mismatch counted: ${await all.innerText()}`);
  await all.locator('button.fetch-verify-all').click();
  await page.waitForFunction((m) => {
    const el = document.querySelector(`li.approval-item[data-kind="final"][data-mission="${m}"] .verify-all`);
    return el && el.getAttribute('data-ok') === String(el.closest('li.approval-item').querySelectorAll('li.artifact').length);
  }, missionId, { timeout: TIMEOUT_MS });
  check((await all.getAttribute('data-bad')) === '0', `mismatches after verifying all: ${await all.getAttribute('data-bad')}`);
  check(new RegExp(`${n} of ${n} match their hash`).test(await all.locator('.verify-summary').innerText()), `the tally: ${await all.innerText()}`);
  check((await card.locator('li.artifact[data-check="matches"]').count()) === n, 'every Artifact marked as matching');
  await axe(page, 'en /approvals (Artifacts verified)', found);
  // On a phone (390 px): the cards, the verified previews and every button fit the width;
  // nothing but a preview or a hash scrolls sideways on its own.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(300);
  const phone = await page.evaluate(() => {
    const out = [];
    if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push(`page scrolls sideways: ${document.documentElement.scrollWidth} px`);
    for (const el of document.querySelectorAll('main button, main h2, main h3, main .artifact-facts, main .verify-summary, main label')) {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && (r.right > window.innerWidth + 1 || r.left < -1)) out.push(`off-screen: ${el.tagName}.${el.className} "${el.textContent.trim().slice(0, 30)}"`);
    }
    return out.slice(0, 6);
  });
  await page.screenshot({ path: join(resultsDir, 'decide-approvals-en-390.png'), fullPage: true });
  check(phone.length === 0, `Approvals at 390 px: ${phone.join('; ')}`);
  await page.setViewportSize({ width: 1280, height: 900 });
  const comment = 'Please add a load test before release.';
  await card.locator('textarea.comment').fill(comment);
  tamper = 'mission.request_changes';
  await card.locator('button.request-changes').click();
  const forged = await signDialog(page, 'mission.request_changes');
  row = await outcome(page, forged.actionId, 'refused');
  const code = await row.locator('.wire-code').first().innerText();
  check(code === 'AUTH_INVALID_SIGNATURE', `tampered Command refused with ${code}`);
  check(tampered === 1, `tampered frames: ${tampered}`);
  check((await card.locator('.outcome.refused .wire-code').innerText()) === 'AUTH_INVALID_SIGNATURE', 'the card shows the refusal');
  check(/signature/i.test(await card.locator('.outcome.refused').innerText()), 'the wire code is explained');
  check((await card.locator('textarea.comment').inputValue()) === comment, 'the typed comment is kept');
  await page.screenshot({ path: join(resultsDir, 'decide-refused-en.png'), fullPage: true });
  await card.locator('button.request-changes').click();
  const changes = await signDialog(page, 'mission.request_changes');
  check(changes.actionId !== forged.actionId && changes.payload.feedback === comment, 'a new Command with the same comment');
  row = await outcome(page, changes.actionId, 'accepted');
  check(/mission\.changes_requested/.test(await row.innerText()), 'changes requested');

  // Approve the final Missions as they arrive (the changed one is resubmitted by its Coordinator).
  const approved = new Set();
  const deadline = Date.now() + DEMO_MS;
  while (approved.size < 2 && Date.now() < deadline) {
    const next = page.locator('li.approval-item[data-kind="final"], li.approval-item[data-kind="gate"]').first();
    try {
      await next.waitFor({ timeout: Math.max(1000, deadline - Date.now()) });
    } catch {
      break;
    }
    if ((await next.getAttribute('data-kind')) === 'gate') {
      // A corrective stage may be gated too: granted as above.
      await next.locator('input.operation[value="deploy"]').check();
      await next.locator('button.grant-execution').click();
      const g = await signDialog(page, 'approval.grant_execution');
      await outcome(page, g.actionId, 'accepted');
      continue;
    }
    const mission = await next.getAttribute('data-mission');
    const revision = await next.locator('.revision').getAttribute('data-revision');
    await next.locator('button.approve').click();
    const doc = await signDialog(page, 'mission.approve');
    check(String(doc.payload.missionRevision) === revision, `approve binds revision ${revision}`);
    check(Array.isArray(doc.payload.artifactHashes) && Number.isInteger(doc.expectedRevision), 'approve binds hashes and expectedRevision');
    row = await outcome(page, doc.actionId, 'accepted');
    const r = await row.innerText();
    check(/mission\.approved/.test(r), `approval receipt: ${r}`);
    check(/^sha256:/.test(await row.locator('.stored-hash').innerText()), 'the stored Approval verified again');
    approved.add(mission);
  }
  check(approved.size === 2, `approved Missions: ${[...approved].join(', ')}`);
  check(approved.has(missionId), 'the Mission sent back for changes was approved after resubmission');
  await page.screenshot({ path: join(resultsDir, 'decide-approvals-done-en.png'), fullPage: true });
  // The board agrees: both demo Missions approved.
  await go(page, 'b');
  await page.waitForFunction(() => document.querySelectorAll('.mission-card').length >= 2, null, { timeout: TIMEOUT_MS });
  // And the Approvals view with the decisions, in each locale.
  await go(page, 'a');
  for (const tag of LOCALES) {
    await page.selectOption('#lang-select', tag);
    await page.waitForTimeout(300);
    await page.screenshot({ path: join(resultsDir, `decide-sent-${tag}.png`), fullPage: true });
    await axe(page, `${tag} /approvals (decisions)`, found);
  }
  check(found.length === 0, found.join('\n  '));
  check(page.problems.length === 0, page.problems.join('; '));
  await context.close();
});

let passed = 0;
let failed = 0;
let browser;
try {
  browser = await chromium.launch({ executablePath, headless: true, args: launchArgs, timeout: TIMEOUT_MS });
  for (const t of tests) {
    if (process.env.ONLY && !t.name.includes(process.env.ONLY)) continue;
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
console.log(`end2end decide: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
