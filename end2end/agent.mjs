// An Agent that is not Rust joins an Organization of `weave-console org init` with the files
// `org agent add --out FILE` writes and nothing else (issue 26): Node's own Ed25519 and
// WebSocket (node --experimental-websocket), no code of this repository. It checks the join
// file against the served Registry (the authority key it will verify Events with), says HELLO
// with its operator's private key (the four steps of docs/binding.md: it signs exactly the
// decoded challenge bytes) and gets a Session; a stranger's key under its key ID is refused.
//
// ORG_BASE_URL: the server; AGENT_FILE: the join file; AGENT_SEED: the Agent's 32-byte Ed25519
// seed, base64url (what its operator keeps; scripts/test.sh makes one).
import { createPrivateKey, createPublicKey, randomBytes, randomUUID, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';

const base = process.env.ORG_BASE_URL;
const file = process.env.AGENT_FILE;
const seed = process.env.AGENT_SEED;
if (!base || !file || !seed || typeof WebSocket !== 'function') {
  console.error('end2end agent: ORG_BASE_URL, AGENT_FILE and AGENT_SEED must be set, and node run with --experimental-websocket');
  console.log('end2end agent: 0 passed, 1 failed');
  process.exit(1);
}

function check(cond, message) {
  if (!cond) throw new Error(message);
}

/// An Ed25519 private key from its 32-byte seed (RFC 8410 PKCS#8 v1).
function keyOf(seedB64url) {
  const raw = Buffer.from(seedB64url, 'base64url');
  check(raw.length === 32, 'the seed is not 32 bytes');
  const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), raw]);
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
}

const frame = (type, members) => JSON.stringify({
  protocolVersion: '0.1',
  frameId: `urn:uuid:${randomUUID()}`,
  frameType: type,
  ...members,
});

/// The four HELLO steps; resolves with the server_accept frame, or the ERROR that ended them.
function hello(join, privateKey) {
  const url = new URL(join.paths.websocket, base);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const timer = setTimeout(() => { ws.close(); reject(new Error('no answer within 20 s')); }, 20_000);
    const init = {
      phase: 'client_init',
      agentId: join.agent.agentId,
      keyId: join.agent.keyId,
      clientNonce: randomBytes(16).toString('base64url'),
      supportedVersions: ['0.1'],
    };
    ws.onopen = () => ws.send(frame('HELLO', init));
    ws.onerror = () => { clearTimeout(timer); reject(new Error('the socket failed')); };
    ws.onmessage = (m) => {
      const f = JSON.parse(m.data);
      if (f.frameType === 'HELLO' && f.phase === 'server_challenge') {
        const transcript = Buffer.from(f.challenge, 'base64url');
        const signature = sign(null, transcript, privateKey).toString('base64url');
        ws.send(frame('HELLO', {
          phase: 'client_response',
          agentId: init.agentId,
          keyId: init.keyId,
          clientNonce: init.clientNonce,
          serverNonce: f.serverNonce,
          challengeSignature: signature,
        }));
        return;
      }
      clearTimeout(timer);
      ws.close();
      resolve(f);
    };
  });
}

let passed = 0;
let failed = 0;
const run = async (name, fn) => {
  try {
    await fn();
    passed += 1;
    console.log(`ok: ${name}`);
  } catch (e) {
    failed += 1;
    console.error(`FAIL: ${name}: ${e && e.message ? e.message : e}`);
  }
};

const join = JSON.parse(readFileSync(file, 'utf8'));
await run('the join file names what the served Registry binds', async () => {
  check(!/"(seed|privateKey|d)"/.test(readFileSync(file, 'utf8')), 'the join file holds a private key');
  const registry = await (await fetch(new URL(join.paths.registry, base))).json();
  check(registry.organizationId === join.organizationId, 'another Organization');
  const authority = registry.bindings.find((b) => b.keyId === join.authority.keyId);
  check(authority && authority.publicKey === join.authority.publicKey && authority.principal.type === 'service',
    'the authority key of the join file is not the Registry\'s');
  const mine = registry.bindings.find((b) => b.keyId === join.agent.keyId);
  const ownPublic = createPublicKey(keyOf(seed)).export({ format: 'jwk' }).x;
  check(mine && mine.publicKey === ownPublic && mine.principal.id === join.agent.agentId,
    'the Agent\'s key is not bound to it in the Registry');
  const cards = await (await fetch(new URL(join.paths.agentCards, base))).json();
  check(cards.agentCards.some((c) => c.agentId === join.agent.agentId), 'no Agent Card served');
});
await run('a non-Rust Agent says HELLO with its own key and gets a Session', async () => {
  // The card is registered within a second of `org agent add` (the server watches org.json).
  let accept;
  for (let i = 0; i < 20; i += 1) {
    accept = await hello(join, keyOf(seed));
    if (accept.phase === 'server_accept') break;
    await new Promise((r) => setTimeout(r, 500));
  }
  check(accept.phase === 'server_accept', `HELLO refused: ${JSON.stringify(accept)}`);
  check(Number.isInteger(accept.sessionEpoch) && accept.sessionEpoch >= 1, `no Session Epoch: ${JSON.stringify(accept)}`);
});
await run('another key under the Agent\'s key ID is refused', async () => {
  const stranger = randomBytes(32).toString('base64url');
  const answer = await hello(join, keyOf(stranger));
  check(answer.frameType === 'ERROR' && answer.error.code === 'AUTH_INVALID_SIGNATURE', `answer: ${JSON.stringify(answer)}`);
});
console.log(`end2end agent: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
