// The static demo's authority node (crate demo-node, docs/static-demo.md) in a dedicated module
// Web Worker: the Group Authority, its in-memory log and the §22 demo's simulated Agents, on a
// paced virtual clock. The page talks to it with postMessage only:
//   page → worker  {type:'connect'} | {type:'send', conn, text} | {type:'close', conn}
//                  {type:'pace', factor}   (0 pauses; 'max' jumps to each next wake-up)
//                  {type:'get', id, path}  (the few reads a console makes over HTTP:
//                                           /api/registry, /api/registry/agent-cards, …)
//                  {type:'post', id, path:'/api/commands', body}
//   worker → page  {type:'ready'} | {type:'connected', conn} | {type:'refused'}
//                  {type:'frame', conn, text} | {type:'closed', conn}
//                  {type:'response', id, status, body} | {type:'status', …} | {type:'error', message}
// The demo still waits at every human decision, whatever the pace: only a signed Command ends it.
import init, { DemoNode } from './demo.js';

// The virtual clock: wall time, scaled by the pace since the last change; never goes back. At
// 'max' it jumps to each next wake-up and runs at real time in between.
let factor = 1;
let virtualNow = Date.now();
let lastReal = performance.now();
function now() {
  const t = performance.now();
  virtualNow += (t - lastReal) * (factor === 'max' ? 1 : factor);
  lastReal = t;
  return virtualNow;
}

// Each live session's end (`server_accept`'s `expiresAt`, node time), by connection. The fastest
// pace does not jump past the earliest, less a minute: while the demo waits for its human the
// Agents' wake-ups would otherwise spend a console's 12 h session in seconds. Past that point
// the clock runs at real time.
const sessionEnds = new Map();
const SESSION_MARGIN_MS = 60_000;

// The fastest pace stops jumping once only the human can move the demo on: a decision awaited
// (or the demo finished) and QUIET_JUMPS jumps in a row that did nothing a line reports (each
// only renewed a lease or a session). The clock then runs at real time, so a console's session
// is not spent while the demo waits for its human, until the demo does something again (a
// decision's Command starts it at once; a line from any step resets the count).
const QUIET_JUMPS = 4;
let quietJumps = 0;
let jumped = false;
let waitsForHuman = false;

let node = null;
let timer = null;
const inbox = [];

function flush() {
  for (const [conn, text] of JSON.parse(node.take_frames())) {
    if (text.includes('"server_accept"')) {
      const end = Date.parse(JSON.parse(text).expiresAt);
      if (Number.isFinite(end)) sessionEnds.set(conn, end);
    }
    self.postMessage({ type: 'frame', conn, text });
    if (node.is_closed(conn)) {
      sessionEnds.delete(conn);
      self.postMessage({ type: 'closed', conn });
    }
  }
}

// Tells the page where the demo is; returns how many lines of what it did this brought.
function status() {
  const text = node.take_lines();
  const lines = text ? text.split('\n') : [];
  const gates = JSON.parse(node.gates_json());
  const finished = node.finished();
  waitsForHuman = gates.length > 0 || finished;
  if (lines.length > 0) quietJumps = 0;
  self.postMessage({
    type: 'status',
    now: virtualNow,
    factor,
    gates,
    finished,
    memory: node.memory_bytes(),
    lines,
  });
  return lines.length;
}

function schedule() {
  clearTimeout(timer);
  timer = null;
  jumped = false;
  if (factor === 0) return;
  const wake = node.next_wake_ms();
  let delay;
  if (wake === undefined) delay = 1000;
  else if (factor === 'max') {
    // Fastest: the clock jumps to the next wake-up; a zero timeout between steps keeps the
    // page's messages (a decision, a pause) served in between. Not past a live session's end,
    // and not while only the human can move the demo on.
    const idle = waitsForHuman && quietJumps >= QUIET_JUMPS;
    if (!idle && wake <= Math.min(...sessionEnds.values()) - SESSION_MARGIN_MS) {
      virtualNow = Math.max(virtualNow, wake);
      jumped = true;
      delay = 0;
    } else delay = Math.max(0, wake - now());
  } else delay = Math.max(0, (wake - now()) / factor);
  timer = setTimeout(step, Math.min(delay, 1000));
}

function step() {
  const wasJump = jumped;
  node.tick(now());
  flush();
  if (status() === 0 && wasJump) quietJumps += 1;
  schedule();
}

function get(path) {
  if (path === '/api/registry') return [200, node.registry_json()];
  // The Agents' cards, signed by the Organization's registry service as the server signs them.
  if (path === '/api/registry/agent-cards') return [200, node.agent_cards_json()];
  // The page's own reads: the server's signature on these (a signed console read) guards a
  // socket others can reach; a dedicated Worker answers its own page only.
  if (path.startsWith('/api/groups/')) {
    return [200, node.groups_json(decodeURIComponent(path.slice('/api/groups/'.length)))];
  }
  if (path === '/api/demo/key') return [200, node.demo_key_json()];
  // The visitor key: the console reads the demo before anyone signs in (a read-only session).
  if (path === '/api/demo/visitor') return [200, node.visitor_key_json()];
  // No proposals (the demo opens with the human's Missions), as a server with none answers.
  if (path === '/api/demo/proposals') return [200, JSON.stringify({ proposals: [] })];
  if (path.startsWith('/api/artifacts/')) {
    const a = node.artifact_json(decodeURIComponent(path.slice('/api/artifacts/'.length)));
    return a === undefined ? [404, JSON.stringify({ message: 'no such Artifact' })] : [200, a];
  }
  return [404, JSON.stringify({ message: 'not served by the in-browser authority' })];
}

function handle(m) {
  switch (m && m.type) {
    case 'connect': {
      const conn = node.connect();
      self.postMessage(conn === undefined ? { type: 'refused' } : { type: 'connected', conn });
      return;
    }
    case 'send':
      if (typeof m.text !== 'string' || !Number.isInteger(m.conn)) return;
      node.receive(m.conn, m.text, now());
      flush();
      status();
      schedule();
      return;
    case 'close':
      if (Number.isInteger(m.conn)) node.disconnect(m.conn);
      sessionEnds.delete(m.conn);
      return;
    case 'pace':
      now();
      if (m.factor === 'max' || (typeof m.factor === 'number' && m.factor >= 0 && m.factor <= 1000)) {
        factor = m.factor;
      }
      status();
      schedule();
      return;
    case 'get': {
      const [status, body] = get(String(m.path));
      self.postMessage({ type: 'response', id: m.id, status, body });
      return;
    }
    case 'post': {
      // POST /api/commands only: the same path as a COMMAND frame, answered as the server does.
      if (m.path !== '/api/commands' || typeof m.body !== 'string') {
        self.postMessage({ type: 'response', id: m.id, status: 404, body: '{}' });
        return;
      }
      const answer = JSON.parse(node.post_command(m.body, now()));
      flush();
      status();
      schedule();
      self.postMessage({ type: 'response', id: m.id, status: answer.status, body: answer.body });
      return;
    }
    default:
      return;
  }
}

// Messages that arrive while the module compiles wait, in order (bounded: a page sends a few).
self.onmessage = (e) => {
  if (node) handle(e.data);
  else if (inbox.length < 1024) inbox.push(e.data);
};

init().then(() => {
  const entropy = crypto.getRandomValues(new Uint8Array(32));
  node = new DemoNode(entropy, now(), false);
  self.postMessage({ type: 'ready' });
  for (const m of inbox.splice(0)) handle(m);
  step();
}, (err) => self.postMessage({ type: 'error', message: String(err) }));
