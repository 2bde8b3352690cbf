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
// Approvals views in the demo. Offline after the first load (sw.js): the first view cached at
// install, other views on first use, a new build's cache; and a page of an old build left open
// across a new build opens a view it had not opened from its build's cache, kept while it is
// open (one old cache at most). Prints the time from navigation to the first execution gate at
// the default pace (real time) and at the fastest, the page weight fetched up to the first gate
// (raw and gzip -9 of each file the server sent), the tab's memory after the whole scenario, and
// `end2end static-demo: N passed, N failed`. ONLY=text runs the tests whose name contains it.
//
// DIST (default dist-demo) is the folder to serve; build it first with scripts/build-web.sh demo.
// With BASE_URL the folder is already served there (e.g. `python3 -m http.server -d dist-demo`)
// and this file starts no server.
import { createServer } from 'node:http';
import { gzipSync } from 'node:zlib';
import { cp, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
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

/// Every file the server sent, by its path in the folder (`/` is `/index.html`): its raw size
/// and its gzip -9 size (what a static host that compresses would send); `sent`, every answer
/// with a file, in order (a file sent twice is there twice).
const served = new Map();
const sent = [];

/// What every answer of the test's server carries: cross-origin isolation (the tab's memory is
/// measured with `performance.measureUserAgentSpecificMemory()`, which needs it).
const ISOLATED = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };

/// A plain static file server on loopback: GET of a file under `dir.root` (mutable: a test swaps
/// in another build), served under the path `prefix` (`/demo/`: any prefix must work), nothing
/// else; the content-hashed `pkg/` files immutable (as `weave-console serve` sends them), every
/// file with its `Last-Modified`, every answer cross-origin isolated. While `down` is set it drops every connection unanswered (no
/// network). `stop` closes the open connections too, so the page has no network at all after it;
/// `port` serves again where a stopped server was (a service worker's scope is its origin).
async function staticServer(prefix = '/', dir = { root }, port = 0) {
  const self = { down: false };
  const server = createServer(async (req, res) => {
    if (self.down) {
      req.socket.destroy();
      return;
    }
    const url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (!url.startsWith(prefix) || req.method !== 'GET') {
      res.writeHead(404, ISOLATED).end();
      return;
    }
    const asked = normalize(`/${url.slice(prefix.length)}`);
    const path = asked.endsWith('/') ? `${asked}index.html` : asked;
    const file = join(dir.root, path);
    if (!file.startsWith(dir.root)) {
      res.writeHead(404, ISOLATED).end();
      return;
    }
    try {
      // Validators as static hosts send them: `Last-Modified`, and `304` to a request whose
      // `If-Modified-Since` is not older than the file (the service worker's install revalidates
      // the page and the stylesheets).
      const modified = new Date(Math.floor((await stat(file)).mtimeMs / 1000) * 1000);
      const since = Date.parse(req.headers['if-modified-since'] || '');
      if (since >= modified.getTime()) {
        sent.push({ path, raw: 0, gzip: 0, notModified: true });
        res.writeHead(304, { ...ISOLATED, 'last-modified': modified.toUTCString() }).end();
        return;
      }
      const body = await readFile(file);
      const f = { raw: body.length, gzip: gzipSync(body, { level: 9 }).length };
      served.set(path, f);
      sent.push({ path, ...f });
      const cache = path.startsWith('/pkg/') ? { 'cache-control': 'public, max-age=31536000, immutable' } : {};
      res.writeHead(200, { ...ISOLATED, ...cache, 'last-modified': modified.toUTCString(), 'content-type': TYPES[extname(file)] || 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404, ISOLATED).end();
    }
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  return Object.assign(self, {
    base: `http://127.0.0.1:${server.address().port}${prefix}`,
    port: server.address().port,
    dir,
    stop: () => {
      server.close();
      server.closeAllConnections();
    },
  });
}

const tests = [];
function test(name, fn) {
  tests.push({ name, fn });
}

/// Opens the page; collects page errors, console errors and CSP violations. `init`: a script
/// run in the page before its own (context.addInitScript).
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
test('at the fastest pace, once only the human can move the demo on, the demo clock runs at real time', async (browser, base) => {
  const { context, page } = await open(browser, base);
  const clock = async () => Date.parse(await page.locator('#clock').textContent());
  await page.click('button[data-pace="max"]');
  await firstGate(page, GATE_MS);
  const atGate = await clock();
  // The rest of the work done: the first gate and the second Mission's final approval await
  // the human, and nothing else moves the demo on (only leases and sessions are renewed).
  await page.waitForFunction(() => Number(document.body.dataset.gates || 0) >= 2, null, { timeout: 60_000 });
  await page.waitForTimeout(2000);
  const t0 = await clock();
  const w0 = Date.now();
  await page.waitForTimeout(5000);
  const t1 = await clock();
  const w1 = Date.now();
  const pace = (t1 - t0) / (w1 - w0);
  const ahead = (t1 - atGate) / 1000;
  check(ahead < 600, `the demo clock ran ${ahead.toFixed(0)} s past the first gate while only the human could move the demo on`);
  check(pace < 2, `the demo clock ran at ${pace.toFixed(2)}× real time while only the human could move the demo on`);
  console.log(`     fastest pace, only the human to move the demo on: the demo clock ${ahead.toFixed(0)} s past the first gate, then ${pace.toFixed(2)}× real time over ${((w1 - w0) / 1000).toFixed(1)} s`);
  check(page.problems.length === 0, page.problems.join('; '));
  await context.close();
});

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

/// What the page's service worker holds for the copy of the demo at `scope`: each of its caches
/// with its files (paths relative to the folder, sorted) and their bytes.
async function cachedFiles(scope) {
  const out = [];
  for (const name of (await caches.keys()).filter((n) => n.startsWith(`mwp-demo ${scope} `))) {
    const c = await caches.open(name);
    const files = [];
    let bytes = 0;
    for (const r of await c.keys()) {
      files.push(r.url.startsWith(scope) ? r.url.slice(scope.length) : r.url);
      bytes += (await (await c.match(r)).arrayBuffer()).byteLength;
    }
    out.push({ name, files: files.sort(), bytes });
  }
  return out;
}

/// The folder's files a service worker may list (paths relative to it, sorted): all but sw.js
/// and NAME.gz.
async function folderFiles(dir) {
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((d) => d.isFile() && d.name !== 'sw.js' && !d.name.endsWith('.gz'))
    .map((d) => join(d.parentPath ?? d.path, d.name).slice(dir.length + 1))
    .sort();
}

/// The demo's first view in the folder, read from its files and not from sw.js: the page, its
/// stylesheets, every file of the node's pkg/ directory, and the console's app.js, app_bg.wasm,
/// __wasm_split.js, boot.js, worker.js; `pkg`, the console's directory.
function firstView(files) {
  const dirOf = (name) => {
    const f = files.find((x) => x.startsWith('pkg/') && x.endsWith(`/${name}`));
    return f ? f.slice(0, -name.length - 1) : null;
  };
  const demo = dirOf('demo-worker.js');
  const pkg = dirOf('app_bg.wasm');
  const app = ['app.js', 'app_bg.wasm', '__wasm_split.js', 'boot.js', 'worker.js'].map((f) => `${pkg}/${f}`);
  return { core: ['index.html', 'demo.css', 'style/console.css', ...files.filter((f) => f.startsWith(`${demo}/`)), ...app], pkg };
}

/// sw.js's two lists (null where it has none).
function swLists(text) {
  const list = (name) => {
    const m = new RegExp(`const ${name} = (\\[[^\\]]*\\]);`).exec(text);
    return m ? JSON.parse(m[1]) : null;
  };
  return { first: list('FIRST'), later: list('LATER') };
}

const same = (a, b) => a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);

/// In the page: the new sw.js of a new build installed and activated, followed by the service
/// worker's states (not by its caches): the registration's installing, waiting or activating
/// worker, whichever the navigation's update check left, else the one `update()` finds; then its
/// `statechange` to `activated` (`redundant` fails), within `ms`. Returns each state seen.
async function newWorkerActivated({ scope, ms }) {
  const t0 = Date.now();
  const log = [];
  const reg = await navigator.serviceWorker.getRegistration(scope);
  if (!reg) return { ok: false, log: ['no registration'] };
  const say = (what) => log.push(`${Date.now() - t0} ms ${what}: installing ${reg.installing ? reg.installing.state : '-'}, waiting ${reg.waiting ? reg.waiting.state : '-'}, active ${reg.active ? reg.active.state : '-'}`);
  reg.addEventListener('updatefound', () => say('updatefound'));
  say('after the navigation');
  const pending = () => reg.installing || reg.waiting || (reg.active && reg.active.state !== 'activated' ? reg.active : null);
  let w = pending();
  if (!w) {
    try {
      await reg.update();
    } catch (e) {
      say(`update() failed (${e})`);
    }
    say('after update()');
    w = pending();
  }
  if (!w) return { ok: Boolean(reg.active && reg.active.state === 'activated'), log };
  const ok = await new Promise((resolve) => {
    const done = () => {
      if (w.state === 'activated') resolve(true);
      if (w.state === 'redundant') resolve(false);
    };
    w.addEventListener('statechange', () => {
      say(`statechange ${w.state}`);
      done();
    });
    done();
    setTimeout(() => {
      say(`not activated after ${ms} ms`);
      resolve(false);
    }, ms);
  });
  return { ok, log };
}

/// Opens a console view from the header's navigation (in-app: a static host serves the page at
/// the folder only).
async function openView(page, path) {
  await page.locator(`header a[href="${path}"]`).first().click();
}

/// The cache of the copy at `scope` once it holds `want` (kept on first use after the response:
/// polled for up to 15 s); its files.
async function cacheHolding(page, scope, want) {
  let now = [];
  for (let i = 0; i < 60; i += 1) {
    now = await page.evaluate(cachedFiles, scope);
    if (now.length === 1 && want.every((f) => now[0].files.includes(f))) break;
    await page.waitForTimeout(250);
  }
  return now.length === 1 ? now[0].files : [];
}

// Offline after the first load (sw.js and offline.js, docs/static-demo.md): the folder served
// under /demo/ by a server of this test's own. Once the service worker is in control its cache
// holds exactly the first view (FIRST); Sign-in opened online is kept on first use; a view never
// opened, offline, shows the console's alert with its retry, and back online "Try again" opens
// it and its chunks are kept; offline again with the server stopped, a new demo (another run's
// WorkItem IDs) reaches its first execution gate from the cache alone, the views opened before
// open, one never opened shows the alert; then a new build (another sw.js version) replaces the
// cache. Prints the cache's files and bytes at install and the time to the gate offline.
test('offline at a path prefix: the first view cached at install, other views on first use, a never-opened view offline shows the alert and its retry, a new build replaces the cache', async (browser, base) => {
  const own = process.env.BASE_URL ? null : await staticServer('/demo/', { root });
  const url = own ? own.base : base;
  const files = await folderFiles(root);
  const { core, pkg } = firstView(files);
  const lists = swLists(await readFile(join(root, 'sw.js'), 'utf8'));
  const views = { signIn: `${pkg}/split_sign_in.wasm`, protocol: `${pkg}/split_protocol.wasm`, settings: `${pkg}/split_settings.wasm` };
  const { context, page } = await open(browser, url);
  let restarted = null;
  let next = null;
  try {
    const active = await page.evaluate(() => Promise.race([
      navigator.serviceWorker.ready.then(() => navigator.serviceWorker.controller || new Promise((r) => {
        navigator.serviceWorker.addEventListener('controllerchange', r);
      })).then(() => true),
      new Promise((r) => setTimeout(() => r(document.documentElement.dataset.offline || 'no service worker in control after 30 s'), 30_000)),
    ]));
    check(active === true, `sw.js not active: ${active}`);
    // The cache after install, against the folder: the first view, nothing of a view not
    // opened yet, nothing of the bundle runner.
    const installed = await page.evaluate(cachedFiles, url);
    check(installed.length === 1, `caches: ${JSON.stringify(installed.map((c) => c.name))}`);
    const held = installed[0].files;
    const extra = held.filter((f) => !core.includes(f) && !/^pkg\/[^/]+\/(split|chunk)_[^/]+\.wasm$/.test(f));
    check(core.every((f) => held.includes(f)) && extra.length === 0 && !Object.values(views).some((f) => held.includes(f)),
      `the cache after install is not the first view (${held.length} files; missing ${core.filter((f) => !held.includes(f))}; not of the first view ${[...extra, ...Object.values(views).filter((f) => held.includes(f))].slice(0, 8)})`);
    check(lists.first && lists.later, 'sw.js has no FIRST and LATER lists');
    check(same(held, lists.first), `the cache after install is not FIRST: ${held.length} files, FIRST ${lists.first.length}`);
    check(same([...lists.first, ...lists.later], files) && lists.first.every((f) => !lists.later.includes(f)), 'FIRST and LATER are not the folder');
    const gz = held.reduce((t, f) => t + gzipSync(readFileSync(join(root, f)), { level: 9 }).length, 0);
    console.log(`     cached at install by sw.js: ${held.length} files, ${installed[0].bytes} B raw, ${gz} B gzip -9; ${lists.later.length} files on first use`);
    await page.click('button[data-pace="max"]');
    await firstGate(page, GATE_MS);
    const online = await page.locator('#gates li').first().getAttribute('data-key');

    // Online, Sign-in opens: its chunks are kept on first use, and nothing outside the lists.
    let mark = sent.length;
    await openView(page, '/sign-in');
    await page.locator('#use-demo-key').waitFor({ timeout: 60_000 });
    let kept = await cacheHolding(page, url, [views.signIn]);
    let fetched = sent.slice(mark).map((x) => x.path.slice(1)).filter((p) => lists.later.includes(p));
    check(kept.includes(views.signIn) && fetched.every((f) => kept.includes(f)),
      `Sign-in opened online, its chunks not kept (${views.signIn}; fetched ${fetched}): ${kept.length} files cached`);
    check(kept.every((f) => lists.first.includes(f) || lists.later.includes(f)), `cached outside the lists: ${kept.filter((f) => !files.includes(f))}`);

    // Offline, a view never opened (Protocol): the console's alert with its retry.
    await context.setOffline(true);
    if (own) own.down = true;
    await openView(page, '/protocol');
    const alert = page.locator('[data-chunk-error]');
    await alert.waitFor({ timeout: 30_000 });
    const said = (await alert.innerText()).replace(/\s+/g, ' ').trim();
    console.log(`     offline, Protocol never opened: the console's alert "${said}"`);
    check(!page.problems.some((p) => p.startsWith('pageerror')), page.problems.join('; '));
    // Back online, "Try again" opens it and its chunks are kept.
    await context.setOffline(false);
    if (own) own.down = false;
    mark = sent.length;
    await alert.locator('button').click();
    await page.locator('#run-bundles').waitFor({ timeout: 60_000 });
    kept = await cacheHolding(page, url, [views.protocol]);
    fetched = sent.slice(mark).map((x) => x.path.slice(1)).filter((p) => lists.later.includes(p));
    check(kept.includes(views.protocol) && fetched.every((f) => kept.includes(f)),
      `Protocol opened by "Try again", its chunks not kept (${views.protocol}; fetched ${fetched})`);
    console.log(`     online again, "Try again" opened Protocol; cached now ${kept.length} files`);

    // The network goes away: the context offline and the server stopped.
    await context.setOffline(true);
    if (own) own.stop();
    const responses = [];
    page.on('response', (r) => responses.push([r.url(), r.fromServiceWorker()]));
    page.problems.length = 0;
    page.started = Date.now();
    await page.goto(url);
    await page.click('button[data-pace="max"]');
    const ms = await firstGate(page, GATE_MS);
    const offline = await page.locator('#gates li').first().getAttribute('data-key');
    check(offline && offline !== online, `the same demo again? ${online} / ${offline}`);
    await openView(page, '/sign-in');
    await page.locator('#use-demo-key').waitFor({ timeout: 60_000 });
    await openView(page, '/protocol');
    await page.locator('#run-bundles').waitFor({ timeout: 60_000 });
    await openView(page, '/settings');
    await page.locator('[data-chunk-error]').waitFor({ timeout: 30_000 });
    console.log(`     offline, server stopped: a new demo's first execution gate at the fastest pace ${ms} ms after navigation; Sign-in and Protocol opened from the cache, Settings (never opened) shows the alert; ${responses.length} responses, ${responses.filter(([, sw]) => sw).length} from the service worker`);
    check(responses.length > 0 && responses.every(([, sw]) => sw), JSON.stringify(responses.filter(([, sw]) => !sw)));
    check(!page.problems.some((p) => p.startsWith('pageerror')), page.problems.join('; '));

    if (own) {
      // The next build: the same folder with another sw.js version, served at the same URL.
      next = await mkdtemp(join(tmpdir(), 'mwp-demo-next-'));
      await cp(root, next, { recursive: true });
      const sw = await readFile(join(root, 'sw.js'), 'utf8');
      const v = /const VERSION = '([^']*)'/.exec(sw)[1];
      await writeFile(join(next, 'sw.js'), sw.replace(`const VERSION = '${v}'`, `const VERSION = '${v}-next'`));
      restarted = await staticServer('/demo/', { root: next }, own.port);
      await context.setOffline(false);
      await page.goto(url);
      const states = await page.evaluate(newWorkerActivated, { scope: url, ms: 90_000 });
      check(states.ok, `the new build's sw.js did not take over: ${states.log.join('; ')}`);
      const after = await page.evaluate(cachedFiles, url);
      console.log(`     after a new build: ${after.map((c) => `${c.files.length} files, ${c.bytes} B (${c.name.slice(-21)})`)}; the service worker ${states.log[states.log.length - 1]}`);
      check(after.length === 1 && after[0].name.endsWith('-next') && same(after[0].files, lists.first),
        `the new build's cache did not replace the old one: ${JSON.stringify(after.map((c) => [c.name, c.files.length]))}; ${states.log.join('; ')}`);
    }
  } finally {
    await context.close();
    if (own) own.stop();
    if (restarted) restarted.stop();
    if (next) await rm(next, { recursive: true, force: true });
  }
});

/// In the page: true once a service worker controls it, else why not (after 30 s).
async function inControl() {
  return Promise.race([
    navigator.serviceWorker.ready.then(() => navigator.serviceWorker.controller || new Promise((r) => {
      navigator.serviceWorker.addEventListener('controllerchange', r);
    })).then(() => true),
    new Promise((r) => setTimeout(() => r(document.documentElement.dataset.offline || 'no service worker in control after 30 s'), 30_000)),
  ]);
}

/// The host's next build, as a copy of the folder `from`: the console's content-hashed
/// directory renamed (a new console build is a new `pkg/<hash>/`; the old one is gone from the
/// copy), `index.html` and `sw.js` naming the new one, and another `sw.js` VERSION (`tag`
/// appended). Returns its folder, the console's directory and sw.js's lists.
async function nextBuild(from, tag) {
  const dir = await mkdtemp(join(tmpdir(), 'mwp-demo-next-'));
  await cp(from, dir, { recursive: true });
  const { pkg } = firstView(await folderFiles(dir));
  const renamed = `${pkg}${tag}`;
  await rename(join(dir, pkg), join(dir, renamed));
  for (const f of ['index.html', 'sw.js']) {
    const text = await readFile(join(dir, f), 'utf8');
    await writeFile(join(dir, f), text.split(`${pkg}/`).join(`${renamed}/`));
  }
  const sw = await readFile(join(dir, 'sw.js'), 'utf8');
  const v = /const VERSION = '([^']*)'/.exec(sw)[1];
  const text = sw.replace(`const VERSION = '${v}'`, `const VERSION = '${v}${tag}'`);
  await writeFile(join(dir, 'sw.js'), text);
  return { dir, pkg: renamed, lists: swLists(text) };
}

/// The caches of the copy at `scope` once `done(caches)` holds (polled for up to 15 s: the old
/// cache is deleted after the page that replaced the old one has loaded).
async function cachesWhen(page, scope, done) {
  let now = [];
  for (let i = 0; i < 60; i += 1) {
    now = await page.evaluate(cachedFiles, scope);
    if (done(now)) break;
    await page.waitForTimeout(250);
  }
  return now;
}

const cacheList = (cs) => cs.map((c) => `${c.name.slice(-24)}: ${c.files.length} files, ${c.bytes} B`).join('; ');

// A page left open across a new build (sw.js's prune, docs/static-demo.md): a first page of the
// old build opens Protocol online (its chunks kept on first use); the page is loaded again, so
// it is a page of the old build that has not opened Protocol; the host replaces the folder with
// a next build whose console is another directory (the old one gone) and the page's
// registration installs it. The old build's cache is kept beside the new one; offline, with
// the host down too and the HTTP cache emptied, the old page opens Protocol from it (every file of its console's old
// directory from the service worker, no alert, no page error). A third build, the page still
// open: one old cache at most, the one the page needs (the second build's, needed by no page,
// is deleted). The page loaded again: only the newest build's cache is left, exactly its FIRST.
// A new build's worker creates its cache at install while the older worker still serves the
// pages, and the older one prunes old caches whenever a page loads: it must never take the newer
// build's cache for an old one and delete it (the new worker would then activate with no cache).
test('a worker of an older build never deletes the cache a newer build is installing', async (browser, base) => {
  const own = process.env.BASE_URL ? null : await staticServer('/race/', { root });
  const url = own ? own.base : base;
  const { context, page } = await open(browser, url);
  const inControl = (p) => p.evaluate(() => Promise.race([
    navigator.serviceWorker.ready.then(() => navigator.serviceWorker.controller || new Promise((r) => {
      navigator.serviceWorker.addEventListener('controllerchange', r);
    })).then(() => true),
    new Promise((r) => setTimeout(() => r(false), 30_000)),
  ]));
  try {
    check(await inControl(page) === true, 'sw.js not in control');
    // Loaded again under the worker: every page open is one it has seen fetch its files.
    await page.reload();
    check(await inControl(page) === true, 'sw.js not in control after a reload');
    const newer = await page.evaluate(async () => {
      const scope = (await navigator.serviceWorker.ready).scope;
      const name = `mwp-demo ${scope} a-newer-build`;
      await (await caches.open(name)).put(new URL('pkg/a-newer-build/marker.txt', scope).href, new Response('newer'));
      return name;
    });
    // Another page of this build loads: its first file makes the worker prune.
    const second = await context.newPage();
    await second.goto(url);
    check(await inControl(second) === true, 'sw.js not in control of the second page');
    await second.locator('#gates').waitFor({ timeout: 30_000 }).catch(() => {});
    await second.waitForTimeout(2000);
    const kept = await page.evaluate((n) => caches.has(n), newer);
    check(kept, 'the older build\'s worker deleted the cache of the newer build being installed');
    console.log('     a newer build\'s cache created while the older worker serves: still there after another page loaded and the older worker pruned');
  } finally {
    await context.close();
    if (own) own.stop();
  }
});

test('a page left open across a new build opens a view it had not opened from the old build\'s cache, offline; at most one old cache; once the page is reloaded only the new build\'s cache is left', async (browser, base) => {
  if (process.env.BASE_URL) {
    console.log('     not run: it swaps the folder under a server of its own');
    return;
  }
  const dir = { root };
  const own = await staticServer('/demo/', dir);
  const url = own.base;
  const { pkg } = firstView(await folderFiles(root));
  const protocol = `${pkg}/split_protocol.wasm`;
  const { context, page } = await open(browser, url);
  const builds = [];
  try {
    let active = await page.evaluate(inControl);
    check(active === true, `sw.js not active: ${active}`);
    await openView(page, '/protocol');
    await page.locator('#run-bundles').waitFor({ timeout: 60_000 });
    const kept = await cacheHolding(page, url, [protocol]);
    check(kept.includes(protocol), `Protocol opened online, its chunks not kept: ${kept.length} files cached`);
    const old = (await page.evaluate(cachedFiles, url))[0];

    // The page of the old build that stays open: loaded again through the old build's worker.
    await page.goto(url);
    active = await page.evaluate(inControl);
    check(active === true, `sw.js not in control of the reloaded page: ${active}`);
    await page.locator('header a[href="/protocol"]').first().waitFor({ timeout: 60_000 });

    // The host replaces the folder; the open page's registration finds the new sw.js.
    const second = await nextBuild(root, '-next');
    builds.push(second.dir);
    dir.root = second.dir;
    let states = await page.evaluate(newWorkerActivated, { scope: url, ms: 90_000 });
    check(states.ok, `the new build's sw.js did not take over: ${states.log.join('; ')}`);
    const during = await page.evaluate(cachedFiles, url);
    console.log(`     a new build installed with a page of the old build open (the service worker ${states.log[states.log.length - 1]}): ${cacheList(during)}`);

    // Offline, the host down too: the old page opens Protocol, which it had not opened. The
    // browser's HTTP cache emptied first (Chromium's DevTools protocol): it may hold the chunks
    // the first page fetched (the server sends pkg/ `immutable`), but it is no store the demo can
    // count on (evicted at will; a host may send no cache headers), and it would hide what the
    // service worker does.
    await (await context.newCDPSession(page)).send('Network.clearBrowserCache');
    await context.setOffline(true);
    own.down = true;
    const responses = [];
    const mine = `${url}${pkg}/`;
    page.on('response', (r) => {
      if (r.url().startsWith(mine)) responses.push({ url: r.url().slice(url.length), status: r.status(), sw: r.fromServiceWorker() });
    });
    page.problems.length = 0;
    await openView(page, '/protocol');
    const opened = await Promise.race([
      page.locator('#run-bundles').waitFor({ timeout: 60_000 }).then(() => true),
      page.locator('[data-chunk-error]').waitFor({ timeout: 60_000 })
        .then(async () => `the console's alert "${(await page.locator('[data-chunk-error]').innerText()).replace(/\s+/g, ' ').trim()}"`),
    ]);
    console.log(`     offline, the host down: the old page opens Protocol (never opened in it): ${opened === true ? 'opened' : opened}; ${responses.length} responses of its console's old directory, ${responses.filter((r) => r.sw && r.status === 200).length} from the service worker`);
    check(opened === true, `the page of the old build did not open Protocol: ${opened}; ${JSON.stringify(responses)}`);
    check(responses.some((r) => r.url === protocol) && responses.every((r) => r.sw && r.status === 200), `not all from the service worker: ${JSON.stringify(responses)}`);
    check(!page.problems.some((p) => p.startsWith('pageerror')), page.problems.join('; '));
    check(during.length === 2 && during.some((c) => c.name === old.name && c.files.includes(protocol)) && during.some((c) => c.name.endsWith('-next') && same(c.files, second.lists.first)),
      `with the old page open, not the old cache and the new one: ${cacheList(during)}`);

    // Online, a third build, the old page still open: the second build's cache is needed by no
    // page and deleted; the old page's is kept; one old cache at most.
    await context.setOffline(false);
    own.down = false;
    const third = await nextBuild(root, '-third');
    builds.push(third.dir);
    dir.root = third.dir;
    states = await page.evaluate(newWorkerActivated, { scope: url, ms: 90_000 });
    check(states.ok, `the third build's sw.js did not take over: ${states.log.join('; ')}`);
    const bound = await page.evaluate(cachedFiles, url);
    console.log(`     a third build, the old page still open: ${cacheList(bound)}`);
    check(bound.length === 2 && bound.some((c) => c.name === old.name) && bound.some((c) => c.name.endsWith('-third')),
      `not the old page's cache and the third build's: ${cacheList(bound)}`);

    // The page loaded again: a page of the third build; the old build's cache is gone.
    await page.goto(url);
    await page.locator('header a[href="/protocol"]').first().waitFor({ timeout: 60_000 });
    const after = await cachesWhen(page, url, (cs) => cs.length === 1);
    console.log(`     the old page reloaded: ${cacheList(after)}`);
    check(after.length === 1 && after[0].name.endsWith('-third') && same(after[0].files, third.lists.first),
      `the old build's cache is not gone once its page is reloaded: ${cacheList(after)}`);
    check(!page.problems.some((p) => p.startsWith('pageerror')), page.problems.join('; '));
  } finally {
    await context.close();
    own.stop();
    for (const b of builds) await rm(b, { recursive: true, force: true });
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

/// Run in the page before its scripts: keeps every WebAssembly memory the page's modules export
/// (`WebAssembly.instantiate`/`instantiateStreaming`: the console's module; its view chunks
/// import that same memory), and each Worker the page starts with the last `memory` its
/// `status` messages gave (the demo's authority: `memory_bytes()`, demo-node/src/worker.rs);
/// `window.__wasmMemories()` tells them. The page's code is unchanged: the tab's memory is read
/// from outside.
function watchMemories() {
  const memories = new Set();
  const keep = (result) => {
    const instance = result && (result.instance || result);
    const memory = instance && instance.exports && instance.exports.memory;
    if (memory instanceof WebAssembly.Memory) memories.add(memory);
    return result;
  };
  for (const name of ['instantiate', 'instantiateStreaming']) {
    const f = WebAssembly[name];
    WebAssembly[name] = function watched(...args) {
      return f.apply(this, args).then(keep);
    };
  }
  const workers = [];
  const W = window.Worker;
  window.Worker = class extends W {
    constructor(url, options) {
      super(url, options);
      const entry = { url: String(url).split('/').pop(), memory: null, live: true };
      workers.push(entry);
      this.watched = entry;
      this.addEventListener('message', (e) => {
        if (e.data && e.data.type === 'status' && typeof e.data.memory === 'number') entry.memory = e.data.memory;
      });
    }

    terminate() {
      this.watched.live = false;
      super.terminate();
    }
  };
  window.__wasmMemories = () => ({ page: [...memories].map((m) => m.buffer.byteLength), workers: workers.filter((w) => w.live) });
}

/// The tab's memory, one figure: `performance.measureUserAgentSpecificMemory()` (the page's and
/// its Workers' JS, the DOM, what they share; it leaves WebAssembly memories out) plus every
/// WebAssembly memory (the console's module in the page, each Worker's), with the breakdown.
/// Needs cross-origin isolation (this file's server sends it; Python's does not: null) and
/// Chromium's ForceEagerMeasureMemory (else the browser answers at its own time, up to minutes).
async function tabMemory(page) {
  return page.evaluate(async () => {
    if (!self.crossOriginIsolated || !performance.measureUserAgentSpecificMemory) return null;
    const m = await performance.measureUserAgentSpecificMemory();
    const parts = new Map();
    for (const b of m.breakdown) {
      if (!b.bytes) continue;
      const where = b.attribution.length ? [...new Set(b.attribution.map((a) => a.scope))].join('+') : 'shared';
      const key = `${where} ${b.types.join('+') || 'other'}`;
      parts.set(key, (parts.get(key) || 0) + b.bytes);
    }
    const wasm = window.__wasmMemories ? window.__wasmMemories() : { page: [], workers: [] };
    const memories = [
      ...wasm.page.map((bytes) => ({ what: 'console (page)', bytes })),
      ...wasm.workers.map((w) => ({ what: `${w.url} (Worker)`, bytes: w.memory })),
    ];
    const w = memories.reduce((t, x) => t + (x.bytes || 0), 0);
    return { total: m.bytes + w, measured: m.bytes, parts: [...parts], wasm: w, memories };
  });
}

test('the console in the page: the demo key, the first gate granted through the signing summary, every decision to both final approvals', async (browser, base) => {
  served.clear();
  sent.length = 0;
  const { context, page } = await open(browser, base, 'en-US', watchMemories);
  // Before signing in: the demo runs (the page's panel lists the first decision awaited).
  const gateMs = await firstGate(page, GATE_MS);
  console.log(`     with the console in the page: first execution gate ${gateMs} ms after navigation (default pace)`);
  let raw = 0;
  let gz = 0;
  let module = 0;
  for (const f of sent) {
    raw += f.raw;
    gz += f.gzip;
  }
  let once = 0;
  let app = 0;
  let authority = 0;
  // The console's first view: its directory is app_bg.wasm's.
  const pkg = [...served.keys()].find((p) => p.endsWith('/app_bg.wasm'));
  for (const [path, f] of served) {
    once += f.gzip;
    if (path.endsWith('/demo_bg.wasm')) module = f.gzip;
    if (path === '/style/console.css' || (pkg && path.startsWith(pkg.slice(0, -'app_bg.wasm'.length)))) app += f.gzip;
    // Issue 30's budget: the authority and the Agents are the node's module, its glue and the
    // Worker's script; the page around them (index.html, its script and stylesheet, sw.js,
    // offline.js) is counted apart.
    if (/\/(demo_bg\.wasm|demo\.js|demo-worker\.js)$/.test(path)) authority += f.gzip;
  }
  // The first visit as this server sent it: the page's own loads and the service worker's
  // install (the first view again: the page and the stylesheets past the HTTP cache, the
  // content-hashed files from it).
  if (process.env.BASE_URL) console.log('     the first visit: not counted (another server, BASE_URL)');
  else console.log(`     the first visit to the first gate as sent: ${sent.length} requests (${sent.filter((x) => x.notModified).length} answered 304), ${served.size} files: ${raw} B raw, ${gz} B gzip -9: the console's first view ${app} B, the authority and Agents ${authority} B (their module demo_bg.wasm ${module} B), the page and its service worker ${gz - app - authority} B (each file once ${once} B)`);
  check(process.env.BASE_URL || authority <= 400_000, `the authority and Agents weigh ${authority} B gzip, over issue 30's 400 KB`);
  check(process.env.BASE_URL || (served.has('/style/console.css') && [...served.keys()].some((p) => p.endsWith('/app_bg.wasm'))), 'the console was not loaded');
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
  // The tab's memory after the whole scenario, one figure.
  const mem = await tabMemory(page);
  if (!mem) {
    console.log('     the tab\'s memory after the whole scenario: not measured (the server sends no cross-origin isolation)');
  } else {
    console.log(`     the tab's memory after the whole scenario: ${mem.total} B = measureUserAgentSpecificMemory ${mem.measured} B (${mem.parts.map(([k, v]) => `${k} ${v}`).join('; ')}) + WebAssembly memories ${mem.wasm} B (${mem.memories.map((x) => `${x.what} ${x.bytes}`).join('; ')})`);
    check(mem.memories.some((x) => x.what === 'console (page)') && mem.memories.some((x) => x.what === 'demo-worker.js (Worker)' && x.bytes > 0),
      `a WebAssembly memory not found: ${JSON.stringify(mem.memories)}`);
  }
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

/// Between the console and the Worker, the answer to `GET /api/demo/visitor` changed as
/// `variant` says: `unmarked` (no `readOnly`), `not-a-human` (a principal the Registry does not
/// list as a human) or `bound` (the demo key itself, which the Registry binds, marked read-only).
/// Counts the console's sockets as `countSockets` does.
function tamperVisitorKey(variant) {
  const W = window.Worker;
  window.__sockets = { connect: 0, close: 0 };
  window.__tamperedVisitor = null;
  const asked = new Set();
  window.Worker = class extends W {
    postMessage(m, ...rest) {
      if (m && m.type === 'get' && m.path === '/api/demo/visitor') {
        asked.add(m.id);
        if (variant === 'bound') m = { ...m, path: '/api/demo/key' };
      }
      if (m && (m.type === 'connect' || m.type === 'close')) window.__sockets[m.type] += 1;
      return super.postMessage(m, ...rest);
    }

    set onmessage(f) {
      super.onmessage = (e) => {
        const m = e.data;
        if (m && m.type === 'response' && asked.has(m.id)) {
          const doc = JSON.parse(m.body);
          if (variant === 'unmarked') delete doc.readOnly;
          if (variant === 'not-a-human') doc.principalId = 'urn:missionweaveprotocol:agent:not-a-human';
          if (variant === 'bound') {
            delete doc.demo;
            doc.readOnly = true;
          }
          window.__tamperedVisitor = variant;
          f({ data: { ...m, body: JSON.stringify(doc) } });
          return;
        }
        f(e);
      };
    }

    get onmessage() {
      return super.onmessage;
    }
  };
}

test('a visitor key the console refuses: no session opens, the header says why and that signing in still works, and it does', async (browser, base) => {
  const said = [];
  for (const [variant, reason] of [['unmarked', /gave no read-only visitor key/], ['not-a-human', /names no human of the Registry/], ['bound', /bound in the Registry, so it could sign/]]) {
    const context = await browser.newContext({ locale: 'en-US' });
    await context.addInitScript(tamperVisitorKey, variant);
    const page = await context.newPage();
    page.problems = [];
    page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
    await page.goto(base);
    const refused = page.locator('header #visitor-refused');
    await refused.waitFor({ timeout: 60_000 }).catch(async (e) => {
      const tampered = await page.evaluate(() => window.__tamperedVisitor);
      throw new Error(`${variant}: no refusal shown (tampered: ${tampered}; the header says ${await page.locator('header .who').innerText().catch(() => '?')}): ${e.message.split('\n')[0]}`);
    });
    const text = await refused.innerText();
    check(reason.test(text), `${variant}: the refusal says ${text}`);
    check(/could not be opened/.test(text) && /Signing in still works/.test(text), `${variant}: ${text}`);
    const sockets = await page.evaluate(() => window.__sockets);
    check(sockets.connect === 0, `${variant}: a session was opened with a refused visitor key: ${JSON.stringify(sockets)}`);
    said.push(`${variant}: "${text}"`);
    if (variant === 'bound') {
      // Signing in still works, and the refusal is gone once someone is signed in.
      await useDemoKey(page);
      check(await refused.count() === 0, 'the refusal is still shown after signing in');
    }
    check(page.problems.length === 0, `${variant}: ${page.problems.join('; ')}`);
    await context.close();
  }
  console.log(`     refused visitor keys, each told in the header with no session opened:\n       ${said.join('\n       ')}\n     then the demo key signed in`);
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
  // ForceEagerMeasureMemory: measureUserAgentSpecificMemory answers at once (tabMemory).
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--enable-blink-features=ForceEagerMeasureMemory'],
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
