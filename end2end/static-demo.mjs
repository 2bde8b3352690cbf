// Browser test of the static demo (issue 30, docs/static-demo.md): `scripts/build-web.sh demo`'s
// dist-demo/ served by a plain static file server of this file (Node's http module: files and
// MIME types, nothing of weave-console), opened in Debian's Chromium through playwright-core.
// The page starts the in-memory authority node in a module Web Worker under the console's CSP
// (a meta tag: no inline script, WebAssembly under 'wasm-unsafe-eval' only); the demo runs to
// its first execution gate and waits there; the page's own key (the demo key, imported into
// WebCrypto) signs in over postMessage with the /ws frames, signs the gate's grant, and the work
// starts (the frame path by hand); the pace control pauses the demo's clock; the page says it is
// an in-browser authority, in the three languages; axe finds no serious or critical violation.
// Before anyone signs in, the console reads the demo with its visitor key (a read-only session):
// the board fills, the first execution gate awaits the human on Approvals with its goal and asks
// to sign in, nothing is sent, no alarm (en, fr, zh-TW; axe on that Approvals view).
// Then the console in the page (its Backend seam, window.mwpDemo): signed in with the one-click
// demo key, it grants the first execution gate through its signing summary, the Mission goes
// on, and every later decision (gates, final approvals) is signed the same way until both
// Missions are approved, with no alarm; a tampered copy of an Event injected between the
// Worker and the console (a `frame` message, one letter of its payload changed) raises the
// console's AUTH_INVALID_SIGNATURE alarm naming it; axe on the console's Sign-in, board and
// Approvals views in the demo. Prints the time from navigation to the first execution gate at
// the default pace (real time) and at the fastest, the page weight fetched up to the first gate
// (raw and gzip -9 of each file the server sent), the tab's memory after the whole scenario, and
// `end2end static-demo: N passed, N failed`. ONLY=text runs the tests whose name contains it.
//
// DIST (default dist-demo) is the folder to serve; build it first with scripts/build-web.sh demo.
// With BASE_URL the folder is already served there (e.g. `python3 -m http.server -d dist-demo`)
// and this file starts no server.
import { createServer } from 'node:http';
import { gzipSync } from 'node:zlib';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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

/// Every file the server sent, by path: its raw size and its gzip -9 size (what a static host
/// that compresses would send).
const served = new Map();

/// A plain static file server on loopback: GET of a file under `dir.root` (mutable: a test swaps
/// in another build), served under the path `prefix` (`/demo/`: any prefix must work), nothing
/// else. `stop` closes the open connections too, so the page has no network at all after it.
async function staticServer(prefix = '/', dir = { root }) {
  const server = createServer(async (req, res) => {
    const url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (!url.startsWith(prefix) || req.method !== 'GET') {
      res.writeHead(404).end();
      return;
    }
    const path = normalize(`/${url.slice(prefix.length)}`);
    const file = join(dir.root, path.endsWith('/') ? `${path}index.html` : path);
    if (!file.startsWith(dir.root)) {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = await readFile(file);
      served.set(path, { raw: body.length, gzip: gzipSync(body, { level: 9 }).length });
      res.writeHead(200, { 'content-type': TYPES[extname(file)] || 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${server.address().port}${prefix}`,
    dir,
    stop: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}

const tests = [];
function test(name, fn) {
  tests.push({ name, fn });
}

/// Opens the page; collects page errors, console errors and CSP violations.
async function open(browser, base, locale = 'en-US', init = null) {
  const context = await browser.newContext({ locale });
  if (init) await context.addInitScript(init);
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
  const gates = await page.locator('#gates li[data-kind="execution"]').allTextContents();
  check(gates.some((g) => /^Execution gate: \S/.test(g)), `no execution gate listed with its goal: ${gates}`);
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

// The frame path of the in-page transport, before the console uses it: a second Worker of the
// page's own script; the page imports the demo key into WebCrypto (Ed25519), signs the HELLO
// challenge, subscribes, and signs the grant of the first execution gate itself (JCS: sorted
// members, no whitespace); the Worker's authority accepts it and the gated work starts.
test('the page signs in over postMessage with its own key, grants the first gate, the work starts, and every decision after it brings both Missions to approval', async (browser, base) => {
  const { context, page } = await open(browser, base);
  const out = await page.evaluate(async () => {
    const w = new Worker(document.querySelector('meta[name="mwp-demo-worker"]').content, { type: 'module' });
    const inbox = [];
    let wake = null;
    w.onmessage = (e) => {
      inbox.push(e.data);
      if (wake) wake();
    };
    // The first message from index `from` on that `pred` accepts.
    const next = async (pred, from = 0, ms = 30000) => {
      const t0 = Date.now();
      for (;;) {
        const m = inbox.slice(from).find(pred);
        if (m) return m;
        if (Date.now() - t0 > ms) throw new Error(`timed out waiting in the page (${inbox.length} messages)`);
        await new Promise((r) => {
          wake = r;
          setTimeout(r, 200);
        });
      }
    };
    const frame = (pred) => (m) => m.type === 'frame' && pred(JSON.parse(m.text));
    const parsed = (m) => JSON.parse(m.text);
    let ids = 0;
    const request = async (path) => {
      const id = ++ids;
      w.postMessage({ type: 'get', id, path });
      return JSON.parse((await next((m) => m.type === 'response' && m.id === id)).body);
    };
    const b64u = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)))
      .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    const unb64u = (t) => Uint8Array.from(atob(t.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
    // JCS for what this test signs: strings, integers, arrays and objects (RFC 8785).
    const jcs = (v) => (Array.isArray(v) ? `[${v.map(jcs).join(',')}]`
      : v && typeof v === 'object' ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${jcs(v[k])}`).join(',')}}`
        : JSON.stringify(v));
    let n = 0;
    const head = (frameType) => ({ protocolVersion: '0.1', frameId: `urn:missionweaveprotocol:frame:page:${++n}`, frameType });

    await next((m) => m.type === 'ready');
    const key = await request('/api/demo/key');
    const pkcs8 = new Uint8Array([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70,
      0x04, 0x22, 0x04, 0x20, ...unb64u(key.seed)]);
    const priv = await crypto.subtle.importKey('pkcs8', pkcs8, { name: 'Ed25519' }, false, ['sign']);
    const sign = async (bytes) => b64u(await crypto.subtle.sign('Ed25519', priv, bytes));

    w.postMessage({ type: 'connect' });
    const { conn } = await next((m) => m.type === 'connected');
    const send = (f) => w.postMessage({ type: 'send', conn, text: JSON.stringify(f) });
    const clientNonce = b64u(crypto.getRandomValues(new Uint8Array(16)));
    send({ ...head('HELLO'), phase: 'client_init', agentId: key.principalId, keyId: key.keyId, clientNonce, supportedVersions: ['0.1'] });
    const challenge = parsed(await next(frame((f) => f.phase === 'server_challenge')));
    send({
      ...head('HELLO'), phase: 'client_response', agentId: key.principalId, keyId: key.keyId, clientNonce,
      serverNonce: challenge.serverNonce, challengeSignature: await sign(unb64u(challenge.challenge)),
    });
    await next(frame((f) => f.phase === 'server_accept'));

    w.postMessage({ type: 'pace', factor: 'max' });
    const gated = await next((m) => m.type === 'status' && m.gates.some((g) => g.kind === 'execution'));
    const gate = gated.gates.find((g) => g.kind === 'execution');
    const { groups } = await request(`/api/groups/${encodeURIComponent(key.principalId)}`);
    const before = inbox.length;
    send({ ...head('SUBSCRIBE'), subscriptionId: 'urn:missionweaveprotocol:subscription:page', groups: groups.map((groupId) => ({ groupId, afterSequence: 0 })) });
    // Then a PING: the Worker answers frames in order, so its echo comes after the whole
    // replay. (A `status` is no such sign: one posted before the SUBSCRIBE was read may still be
    // on its way, the more so with the console's own session running in the page.)
    const pingNonce = b64u(crypto.getRandomValues(new Uint8Array(12)));
    send({ ...head('PING'), nonce: pingNonce, sentAt: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') });
    await next(frame((f) => f.frameType === 'PING' && f.replyToNonce === pingNonce), before);
    const events = inbox.filter(frame((f) => f.frameType === 'EVENT')).map((m) => parsed(m).event);
    // The human's Membership Epoch in the gate's Group, from the Events it replayed.
    let membershipEpoch;
    const walk = (v) => {
      if (!v || typeof v !== 'object') return;
      // The authority's Membership projection (`principal`, `epoch`, `groupId`), as the
      // Events carry it; the last one seen is the current one.
      if (v.principal && v.principal.id === key.principalId && Number.isInteger(v.epoch) && v.groupId === gate.groupId) {
        membershipEpoch = v.epoch;
      }
      Object.values(v).forEach(walk);
    };
    // The console folds the Events with the authority's reducer; this test reads the two rules
    // it needs: `mission.created` gives the MissionOwner Membership Epoch 1 (2 when it also
    // coordinates), and any later Membership in a payload replaces it.
    for (const e of events.filter((x) => x.groupId === gate.groupId)) {
      const m = e.kind === 'mission.created' && e.payload.mission;
      if (m && m.owner.id === key.principalId) membershipEpoch = m.coordinatorId === key.principalId ? 2 : 1;
      walk(e.payload);
    }

    const issuedAt = new Date(Math.floor(gated.now / 1000) * 1000).toISOString().replace('.000Z', 'Z');
    const actionId = `urn:missionweaveprotocol:action:page-${b64u(crypto.getRandomValues(new Uint8Array(9)))}`;
    const command = {
      protocolVersion: '0.1', actionId, actor: { type: 'human', id: key.principalId },
      groupId: gate.groupId, kind: 'approval.grant_execution', correlationId: actionId, issuedAt,
      payload: {
        approvalId: `${gate.workItemId}:execution-approval:${gate.ownershipEpoch}`, workItemId: gate.workItemId,
        ownershipEpoch: gate.ownershipEpoch, operations: gate.operations, expiresInSeconds: 3600,
        comments: 'Granted from the page',
      },
    };
    if (membershipEpoch !== undefined) command.membershipEpoch = membershipEpoch;
    const value = await sign(new TextEncoder().encode(jcs(command)));
    command.signature = { algorithm: 'Ed25519', keyId: key.keyId, createdAt: issuedAt, value };
    const sent = inbox.length;
    send({ ...head('COMMAND'), command });
    const granted = await next(frame((f) => f.frameType === 'ERROR'
      || (f.frameType === 'EVENT' && f.event.kind === 'approval.execution.granted' && f.event.cause.id === actionId)), sent);
    if (parsed(granted).frameType === 'ERROR') {
      w.terminate();
      const first = events.find((e) => e.groupId === gate.groupId);
      return { refused: parsed(granted).error, replayed: events.length, groups, first: JSON.stringify(first).slice(0, 3000) };
    }
    const started = await next(frame((f) => f.frameType === 'EVENT' && f.event.kind === 'work.started' && f.event.workItemId === gate.workItemId), sent);
    const firstGrant = { goal: gate.goal, granted: parsed(granted).event.groupId === gate.groupId, started: Boolean(started) };

    // Then every other decision the demo waits for, signed here the same way: the other
    // execution gates granted, the first final approval sent back once with a request for
    // changes, every final approval accepted; until both Missions are approved.
    const decided = new Set([gate.key]);
    let changes = false;
    const counts = { execution: 1, changes: 0, approved: 0 };
    const t0 = performance.now();
    let last = gated;
    for (let round = 0; round < 64; round += 1) {
      const at = inbox.length;
      last = await next((m) => m.type === 'status' && (m.finished || m.gates.some((g) => !decided.has(g.key))), at, 60000);
      if (last.finished) break;
      const g = last.gates.find((x) => !decided.has(x.key));
      decided.add(g.key);
      // Epochs move (a Membership can be renewed): read them again from everything received.
      membershipEpoch = undefined;
      for (const e of inbox.filter(frame((f) => f.frameType === 'EVENT')).map((m) => parsed(m).event).filter((x) => x.groupId === g.groupId)) {
        const m = e.kind === 'mission.created' && e.payload.mission;
        if (m && m.owner.id === key.principalId) membershipEpoch = m.coordinatorId === key.principalId ? 2 : 1;
        walk(e.payload);
      }
      const when = new Date(Math.floor(last.now / 1000) * 1000).toISOString().replace('.000Z', 'Z');
      const id = `urn:missionweaveprotocol:action:page-${b64u(crypto.getRandomValues(new Uint8Array(9)))}`;
      let kind;
      let payload;
      if (g.kind === 'execution') {
        kind = 'approval.grant_execution';
        payload = {
          approvalId: `${g.workItemId}:execution-approval:${g.ownershipEpoch}`, workItemId: g.workItemId,
          ownershipEpoch: g.ownershipEpoch, operations: g.operations, expiresInSeconds: 3600, comments: 'Granted from the page',
        };
        counts.execution += 1;
      } else if (!changes) {
        changes = true;
        kind = 'mission.request_changes';
        payload = { missionRevision: g.revision, feedback: 'Add a rollback plan to the release notes' };
        counts.changes += 1;
      } else {
        kind = 'mission.approve';
        payload = {
          approvalId: `${g.missionId}:approval:${g.revision}`, missionRevision: g.revision, artifactHashes: g.artifactHashes,
          acceptancePolicyVersion: '1.0.0', comments: 'Approved from the page',
        };
        counts.approved += 1;
      }
      const doc = {
        protocolVersion: '0.1', actionId: id, actor: { type: 'human', id: key.principalId }, groupId: g.groupId,
        kind, correlationId: id, issuedAt: when, payload,
      };
      if (membershipEpoch !== undefined) doc.membershipEpoch = membershipEpoch;
      doc.signature = { algorithm: 'Ed25519', keyId: key.keyId, createdAt: when, value: await sign(new TextEncoder().encode(jcs(doc))) };
      const mark = inbox.length;
      send({ ...head('COMMAND'), command: doc });
      const answer = parsed(await next(frame((f) => f.frameType === 'ERROR' || (f.frameType === 'EVENT' && f.event.cause.id === id)), mark));
      if (answer.frameType === 'ERROR') {
        w.terminate();
        return { refused: answer.error, kind, gate: g };
      }
    }
    const errors = inbox.slice(sent).filter(frame((f) => f.frameType === 'ERROR')).map((m) => parsed(m).error.code);
    w.terminate();
    return {
      replayed: events.length, membershipEpoch, errors, ...firstGrant, counts, finished: last.finished,
      restMs: Math.round(performance.now() - t0), memory: last.memory,
      pageHeap: performance.memory ? performance.memory.usedJSHeapSize : null,
    };
  });
  check(!out.refused, `the grant was refused: ${JSON.stringify(out)}`);
  console.log(`     replayed ${out.replayed} Events; granted "${out.goal}"`);
  console.log(`     then ${out.counts.execution - 1} more grants, ${out.counts.changes} request for changes, ${out.counts.approved} approvals: finished ${out.finished} in ${out.restMs} ms at the fastest pace`);
  console.log(`     after the whole scenario: the Worker's wasm memory ${out.memory} B; the page's JS heap ${out.pageHeap} B`);
  check(out.errors.length === 0, `ERROR frames: ${out.errors}`);
  check(out.granted && out.started, JSON.stringify(out));
  check(out.finished && out.counts.approved >= 2 && out.counts.changes === 1, JSON.stringify(out.counts));
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
  check(/in-browser authority for demonstration/.test(await page.locator('#demo-panel .notice').textContent()), 'no notice');
  check(page.problems.length === 0, page.problems.join('; '));
  await context.close();
});

test('French and Traditional Chinese; axe finds no serious or critical violation', async (browser, base) => {
  const found = [];
  for (const [locale, notice] of [['en-US', /demonstration/], ['fr-FR', /démonstration/], ['zh-TW', /示範/]]) {
    const { context, page } = await open(browser, base, locale);
    await page.waitForFunction(() => document.getElementById('clock').textContent !== '—');
    check(notice.test(await page.locator('#demo-panel .notice').textContent()), `${locale}: the notice is not translated`);
    const result = await new AxeBuilder({ page }).analyze();
    for (const v of result.violations) {
      if (v.impact === 'serious' || v.impact === 'critical') found.push(`${locale}: ${v.id} (${v.impact})`);
    }
    check(page.problems.length === 0, `${locale}: ${page.problems.join('; ')}`);
    await context.close();
  }
  check(found.length === 0, found.join('\n  '));
});

/// What the page's service worker holds for this copy of the demo: its caches, files and bytes.
async function cachedBytes() {
  const names = (await caches.keys()).filter((n) => n.startsWith('mwp-demo '));
  let files = 0;
  let bytes = 0;
  for (const n of names) {
    const c = await caches.open(n);
    for (const r of await c.keys()) {
      files += 1;
      bytes += (await (await c.match(r)).arrayBuffer()).byteLength;
    }
  }
  return { caches: names, files, bytes };
}

// Offline after the first load (sw.js and offline.js, docs/static-demo.md): the folder served
// under /demo/ by a server of this test's own. Once the service worker has cached the folder, a
// new build (another sw.js version) replaces the old cache; then the network goes away (the
// context offline and the server stopped) and a reload runs the demo again from the cache: a new
// Organization (another run's WorkItem IDs), its first execution gate reached, every response
// from the service worker. Prints the cached files and bytes and the time to the gate offline.
test('offline after the first load, at a path prefix: a new build replaces the cache, and a reload without network runs a new demo to its first gate', async (browser, base) => {
  const own = process.env.BASE_URL ? null : await staticServer('/demo/', { root });
  const next = own ? await mkdtemp(join(tmpdir(), 'mwp-demo-next-')) : null;
  const { context, page } = await open(browser, own ? own.base : base);
  try {
    const active = await page.evaluate(() => Promise.race([
      navigator.serviceWorker.ready.then(() => true),
      new Promise((r) => setTimeout(() => r(document.documentElement.dataset.offline || 'no service worker after 30 s'), 30_000)),
    ]));
    check(active === true, `sw.js not active: ${active}`);
    const first = await page.evaluate(cachedBytes);
    console.log(`     cached by sw.js: ${first.files} files, ${first.bytes} B (${first.caches})`);
    check(first.caches.length === 1 && first.files >= 7, JSON.stringify(first));
    await page.click('button[data-pace="max"]');
    await firstGate(page, GATE_MS);
    const online = await page.locator('#gates li').first().getAttribute('data-key');
    if (own) {
      // The next build: the same folder with another sw.js version, served at the same URL.
      await cp(root, next, { recursive: true });
      const sw = await readFile(join(root, 'sw.js'), 'utf8');
      const v = /const VERSION = '([^']*)'/.exec(sw)[1];
      await writeFile(join(next, 'sw.js'), sw.replace(`const VERSION = '${v}'`, `const VERSION = '${v}-next'`));
      own.dir.root = next;
      await page.reload();
      // The browser checks sw.js on the navigation: the new version installs, caches the
      // folder, takes over and deletes the old cache.
      let after = null;
      for (let i = 0; i < 150; i += 1) {
        after = await page.evaluate(cachedBytes);
        if (after.caches.length === 1 && after.caches[0].endsWith('-next')) break;
        await page.waitForTimeout(200);
      }
      console.log(`     after a new build: ${after.files} files, ${after.bytes} B (${after.caches}); the old cache deleted`);
      check(after.caches.length === 1 && after.caches[0].endsWith('-next'), `the new build's cache did not replace the old one: ${JSON.stringify(after)}`);
      check(after.files === first.files && after.bytes === first.bytes, JSON.stringify(after));
    }
    // The network goes away.
    await context.setOffline(true);
    if (own) own.stop();
    const responses = [];
    page.on('response', (r) => responses.push([r.url(), r.fromServiceWorker()]));
    page.problems.length = 0;
    page.started = Date.now();
    await page.reload();
    await page.click('button[data-pace="max"]');
    const ms = await firstGate(page, GATE_MS);
    const offline = await page.locator('#gates li').first().getAttribute('data-key');
    console.log(`     offline reload: first execution gate at the fastest pace ${ms} ms after navigation; ${responses.length} responses, ${responses.filter(([, sw]) => sw).length} from the service worker`);
    check(offline && offline !== online, `the same demo again? ${online} / ${offline}`);
    check(responses.length > 0 && responses.every(([, sw]) => sw), JSON.stringify(responses));
    check(page.problems.length === 0, page.problems.join('; '));
  } finally {
    await context.close();
    if (own) own.stop();
    if (next) await rm(next, { recursive: true, force: true });
  }
});

// The console in the page (docs/static-demo.md, "The console in the page"): the page sets
// window.mwpDemo, the console's socket and HTTP reads go to the Worker over postMessage.

/// A Worker whose `onmessage` handler gets, before the first `frame` carrying an Event of
/// sequence 2, a copy of it with one letter of its payload changed (in the page, between the
/// authority's Worker and the console): the tamper test's man in the middle.
function tamperFirstEvent() {
  const W = window.Worker;
  window.__tampered = null;
  window.Worker = class extends W {
    set onmessage(f) {
      super.onmessage = (e) => {
        const m = e.data;
        if (!window.__tampered && m && m.type === 'frame' && m.text.includes('"frameType":"EVENT"')) {
          const frame = JSON.parse(m.text);
          const ev = frame.event;
          // The first Event of sequence 2 with a string in its payload: one ASCII letter changed.
          const path = [];
          const find = (v) => {
            if (typeof v === 'string') return /[a-z]/.test(v);
            if (!v || typeof v !== 'object') return false;
            for (const k of Object.keys(v)) {
              path.push(k);
              if (find(v[k])) return true;
              path.pop();
            }
            return false;
          };
          if (ev && ev.sequence === 2 && find(ev.payload)) {
            let o = ev.payload;
            for (const k of path.slice(0, -1)) o = o[k];
            const last = path[path.length - 1];
            const i = o[last].search(/[a-z]/);
            o[last] = o[last].slice(0, i) + (o[last][i] === 'a' ? 'b' : 'a') + o[last].slice(i + 1);
            window.__tampered = { eventId: ev.eventId, groupId: ev.groupId, member: path.join('.') };
            // Injected before the genuine frame, which follows unchanged.
            f({ data: { ...m, text: JSON.stringify(frame) } });
          }
        }
        f(e);
      };
    }

    get onmessage() {
      return super.onmessage;
    }
  };
}

/// Signs in with the demo key from the console's Sign-in view (in-app navigation: a static host
/// serves index.html at `/` only).
async function useDemoKey(page, connected = true) {
  await page.locator('header a[href="/sign-in"]').first().click();
  const button = page.locator('#use-demo-key');
  await button.waitFor({ timeout: 60_000 });
  const hint = await page.locator('#demo-key-hint').innerText();
  check(/demonstration key/.test(hint) && /not a real identity/.test(hint), `the demo key is not labelled: ${hint}`);
  await button.click();
  await page.locator('#demo-key-held').waitFor({ timeout: 30_000 });
  if (connected) await page.locator('#conn-status[data-state="connected"]').waitFor({ timeout: 60_000 });
}

/// Decides one item on the Approvals view through the console's signing summary; returns the
/// signed document.
async function decide(page, item, button) {
  // The item by its id: the list re-renders as Events arrive.
  const id = await item.getAttribute('id');
  item = page.locator(`li.approval-item[id="${id}"]`);
  await item.locator(button).click();
  const dialog = page.locator('.dialog.signing');
  await dialog.waitFor({ timeout: 30_000 }).catch(async (e) => {
    throw new Error(`${e.message.split('\n')[0]}: no signing summary for ${id}: ${await item.innerText().catch(() => '(gone)')}`);
  });
  await dialog.locator('button[aria-expanded]').click();
  const doc = JSON.parse(await dialog.locator('pre.canonical').innerText());
  await dialog.locator('button.primary').click();
  await dialog.waitFor({ state: 'detached', timeout: 30_000 });
  await page.locator(`#sent li[data-action-id="${doc.actionId}"][data-state="accepted"]`).waitFor({ timeout: 60_000 });
  return doc;
}

/// The renderer processes' resident memory (Chromium's `SystemInfo.getProcessInfo`, then
/// /proc/<pid>/status VmRSS): a dedicated Worker runs in its page's renderer process.
async function rendererRss(browser) {
  const cdp = await browser.newBrowserCDPSession();
  const { processInfo } = await cdp.send('SystemInfo.getProcessInfo');
  await cdp.detach();
  const out = [];
  for (const p of processInfo.filter((x) => x.type === 'renderer')) {
    try {
      const status = await readFile(`/proc/${p.id}/status`, 'utf8');
      const kb = Number((/VmRSS:\s+(\d+)/.exec(status) || [])[1]);
      if (kb) out.push(kb * 1024);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

test('the console in the page: the demo key, the first gate granted through the signing summary, every decision to both final approvals', async (browser, base) => {
  served.clear();
  const { context, page } = await open(browser, base);
  // Before signing in: the demo runs (the page's panel lists the first decision awaited).
  const gateMs = await firstGate(page, GATE_MS);
  console.log(`     with the console in the page: first execution gate ${gateMs} ms after navigation (default pace)`);
  let raw = 0;
  let gz = 0;
  let module = 0;
  for (const [path, f] of served) {
    raw += f.raw;
    gz += f.gzip;
    if (path.endsWith('/demo_bg.wasm')) module = f.gzip;
  }
  console.log(`     page weight to the first gate, ${served.size} files: ${raw} B raw, ${gz} B gzip -9 (of which the authority's module demo_bg.wasm ${module} B)`);
  check(served.has('/style/console.css') && [...served.keys()].some((p) => p.endsWith('/app_bg.wasm')), 'the console was not loaded');
  await useDemoKey(page);
  await page.locator('header nav a[href="/approvals"]').click();
  const gate = page.locator('li.approval-item[data-kind="gate"]').first();
  await gate.waitFor({ timeout: 60_000 });
  await gate.locator('input.operation').first().check();
  const gateId = await gate.getAttribute('id');
  const grant = await decide(page, gate, 'button.grant-execution');
  const key = JSON.parse(await page.evaluate(() => window.mwpDemo.request('GET', '/api/demo/key').then((r) => new TextDecoder().decode(r.body))));
  check(grant.actor.id === key.principalId && grant.kind === 'approval.grant_execution', `the grant: ${JSON.stringify(grant).slice(0, 300)}`);
  const granted = await page.locator(`#sent li[data-action-id="${grant.actionId}"]`).innerText();
  check(/approval\.execution\.granted/.test(granted), `not granted: ${granted}`);
  // The Mission continues: the gated work starts (the panel no longer lists that gate).
  await page.waitForFunction(() => Number(document.body.dataset.gates || 0) === 0 || document.body.dataset.finished === 'true', null, { timeout: 60_000 });
  // Then every other decision at the fastest pace, each through the signing summary: the other
  // gates granted, the final approvals approved, until both Missions are approved.
  await page.click('button[data-pace="max"]');
  const t0 = Date.now();
  const counts = { gates: 1, finals: 0 };
  // Items by id: a decided item may stay listed (with its outcome) until the fold drops it.
  const decided = new Set([gateId]);
  const items = 'li.approval-item[data-kind="gate"], li.approval-item[data-kind="final"]';
  for (let round = 0; round < 32; round += 1) {
    const handle = await page.waitForFunction(([sel, done]) => {
      if (document.body.dataset.finished === 'true') return 'finished';
      const l = [...document.querySelectorAll(sel)].find((x) => !done.includes(x.id));
      return l ? l.id : null;
    }, [items, [...decided]], { timeout: 120_000, polling: 250 });
    const id = await handle.jsonValue();
    if (id === 'finished') break;
    decided.add(id);
    const next = page.locator(`li.approval-item[id="${id}"]`);
    const kind = await next.getAttribute('data-kind');
    if (kind === 'gate') {
      await next.locator('input.operation').first().check();
      await decide(page, next, 'button.grant-execution');
      counts.gates += 1;
    } else {
      await decide(page, next, 'button.approve');
      counts.finals += 1;
    }
  }
  const finished = await page.evaluate(() => document.body.dataset.finished);
  console.log(`     through the console: ${counts.gates} gates granted, ${counts.finals} final approvals; finished ${finished} ${Date.now() - t0} ms after the first grant's work started (fastest pace)`);
  check(finished === 'true' && counts.finals >= 2, JSON.stringify({ finished, counts }));
  check(await page.locator('.alarms .alarm').count() === 0, `alarms: ${await page.locator('.alarms').innerText().catch(() => '')}`);
  // Tab memory after the whole scenario.
  const worker = await page.evaluate(() => new Promise((resolve) => {
    const w = document.getElementById('clock');
    resolve(w ? w.textContent : null);
  }));
  const heap = await page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize : null));
  const rss = await rendererRss(browser);
  console.log(`     after the whole scenario (demo clock ${worker}): the page's JS heap ${heap} B; renderer processes' RSS ${rss.join(', ')} B`);
  const errors = page.problems.filter((p) => p.startsWith('pageerror'));
  check(errors.length === 0, errors.join('; '));
  if (page.problems.length) console.log(`     console messages: ${page.problems.slice(0, 5).join(' | ')}`);
  await context.close();
});

// Before anyone signs in, the console itself reads the demo (the visitor key, a read-only
// session; docs/static-demo.md "Visitor view"): the board fills, the first execution gate awaits
// the human on Approvals with its goal, and its decision asks to sign in; nothing is sent and no
// alarm is raised. In the three languages, with axe on the visitor's Approvals view.
const FIRST_GOAL = 'Deploy the checkout service to staging';

/// Counts the page's `connect` and `close` messages to its Worker (the console's sockets).
function countSockets() {
  const post = Worker.prototype.postMessage;
  window.__sockets = { connect: 0, close: 0 };
  Worker.prototype.postMessage = function (m, ...rest) {
    if (m && (m.type === 'connect' || m.type === 'close')) window.__sockets[m.type] += 1;
    return post.call(this, m, ...rest);
  };
}

test('before sign-in the console reads the demo: the board fills, the first gate awaits the human, its decision asks to sign in (en, fr, zh-TW; axe)', async (browser, base) => {
  const found = [];
  for (const [locale, header] of [['en-US', /^Not signed in: reading the demo$/], ['fr-FR', /lecture de la démo/], ['zh-TW', /正在瀏覽示範/]]) {
    const { context, page } = await open(browser, base, locale, countSockets);
    await page.click('button[data-pace="max"]');
    await firstGate(page, GATE_MS);
    const who = page.locator('header .who');
    await page.waitForFunction(([re]) => new RegExp(re).test(document.querySelector('header .who').textContent), [header.source], { timeout: 60_000 })
      .catch(async (e) => { throw new Error(`${locale}: the header says ${await who.textContent()}: ${e.message.split('\n')[0]}`); });
    await page.locator('header nav a[href="/"]').click();
    await page.waitForFunction(() => document.querySelectorAll('.mission-card').length >= 2, null, { timeout: 60_000 })
      .catch(async (e) => { throw new Error(`${locale}: ${await page.locator('.mission-card').count()} Missions on the board: ${e.message.split('\n')[0]}`); });
    const missions = await page.locator('.mission-card').count();
    await page.locator('header nav a[href="/approvals"]').click();
    const gate = page.locator('li.approval-item[data-kind="gate"]', { hasText: FIRST_GOAL }).first();
    await gate.waitFor({ timeout: 60_000 });
    const ask = gate.locator('.sign-in-to-decide a[href="/sign-in"]');
    check(await ask.count() === 1, `${locale}: the gate's decision does not ask to sign in: ${await gate.innerText()}`);
    check(await gate.locator('form.decide, button.grant-execution').count() === 0, `${locale}: the visitor is offered a decision form`);
    check(await page.locator('#sent li').count() === 0, `${locale}: something was sent before sign-in`);
    check(await page.locator('.alarms .alarm').count() === 0, `${locale}: alarms: ${await page.locator('.alarms').innerText().catch(() => '')}`);
    if (locale === 'en-US') {
      console.log(`     before sign-in, in the console: ${missions} Missions on the board, the gate "${FIRST_GOAL}" awaiting the human; its decision asks to sign in ("${await ask.innerText()}")`);
      // The demo key replaces the visitor's session: one socket open, the human's, whose
      // decision form is offered; the demo key's card has no export, lock or remove.
      await ask.click();
      await page.locator('#use-demo-key').click();
      await page.locator('#demo-key-held').waitFor({ timeout: 30_000 });
      const held = await page.locator('#demo-key-held').innerText();
      check(/no key file/.test(held) && /reloads/.test(held), `the demo key's card: ${held}`);
      check(await page.locator('#key-held').locator('#export, #lock, #forget').count() === 0, 'the demo key offers export, lock or remove');
      await page.locator('header nav a[href="/approvals"]').click();
      await page.locator('li.approval-item[data-kind="gate"] button.grant-execution').first().waitFor({ timeout: 60_000 });
      await page.locator('#conn-status[data-state="connected"]').waitFor({ timeout: 60_000 });
      const sockets = await page.evaluate(() => window.__sockets);
      check(sockets.connect - sockets.close === 1, `sockets left open: ${JSON.stringify(sockets)}`);
      console.log(`     then the demo key: the visitor's session replaced (${sockets.connect} opened, ${sockets.close} closed), the gate's form offered`);
    } else {
      const result = await new AxeBuilder({ page }).analyze();
      for (const v of result.violations) {
        if (v.impact === 'serious' || v.impact === 'critical') found.push(`${locale} approvals: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
      }
    }
    const errors = page.problems.filter((p) => p.startsWith('pageerror'));
    check(errors.length === 0, `${locale}: ${errors.join('; ')}`);
    await context.close();
  }
  check(found.length === 0, found.join('\n  '));
});

test('a tampered Event between the Worker and the console raises the console\'s alarm', async (browser, base) => {
  const context = await browser.newContext({ locale: 'en-US' });
  await context.addInitScript(tamperFirstEvent);
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
  await page.goto(base);
  // At the default pace: the replay after sign-in carries the Event of sequence 2.
  await useDemoKey(page, false);
  await page.waitForFunction(() => window.__tampered, null, { timeout: 60_000 });
  const tampered = await page.evaluate(() => window.__tampered);
  // One alarm, this one.
  const alarm = page.locator('.alarms .alarm[data-cause-code="AUTH_INVALID_SIGNATURE"]');
  await alarm.first().waitFor({ timeout: 30_000 });
  check(await page.locator('.alarms .alarm').count() === 1, `alarms: ${await page.locator('.alarms').innerText()}`);
  await alarm.locator('summary').click();
  const text = await alarm.innerText();
  check(text.includes(tampered.eventId), `the alarm does not name the tampered Event ${tampered.eventId}: ${text}`);
  // The genuine frame followed: the session stays up.
  await page.locator('#conn-status[data-state="connected"]').waitFor({ timeout: 60_000 }).catch(async (e) => {
    const state = await page.locator('#conn-status').getAttribute('data-state');
    const said = await page.locator('#conn-status').innerText();
    throw new Error(`${e.message.split('\n')[0]}: the connection is ${state} (${said}); alarms: ${await page.locator('.alarms').innerText()}`);
  });
  console.log(`     tampered ${tampered.member} of Event ${tampered.eventId}: alarm AUTH_INVALID_SIGNATURE raised`);
  check(page.problems.length === 0, page.problems.join('; '));
  await context.close();
});

test('axe finds no serious or critical violation on the console in the demo (sign-in, board, approvals)', async (browser, base) => {
  const { context, page } = await open(browser, base);
  const found = [];
  const scan = async (where) => {
    const result = await new AxeBuilder({ page }).analyze();
    for (const v of result.violations) {
      if (v.impact === 'serious' || v.impact === 'critical') found.push(`${where}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
    }
  };
  await page.locator('header a[href="/sign-in"]').first().waitFor({ timeout: 60_000 });
  await page.locator('header a[href="/sign-in"]').first().click();
  await page.locator('#use-demo-key').waitFor({ timeout: 60_000 });
  await scan('sign-in');
  await page.locator('#use-demo-key').click();
  await page.locator('#conn-status[data-state="connected"]').waitFor({ timeout: 60_000 });
  await page.click('button[data-pace="max"]');
  await firstGate(page, GATE_MS);
  await page.locator('header nav a[href="/"]').click();
  await page.locator('.mission-card').first().waitFor({ timeout: 60_000 });
  await scan('board');
  await page.locator('header nav a[href="/approvals"]').click();
  await page.locator('li.approval-item').first().waitFor({ timeout: 60_000 });
  await scan('approvals');
  check(found.length === 0, found.join('\n  '));
  await context.close();
});

const server = process.env.BASE_URL ? { base: process.env.BASE_URL, stop: () => {} } : await staticServer();
const browser = await chromium.launch({
  executablePath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
});
let passed = 0;
let failed = 0;
// ONLY=<words> runs the tests whose name contains them.
for (const t of tests.filter((x) => !process.env.ONLY || x.name.includes(process.env.ONLY))) {
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
