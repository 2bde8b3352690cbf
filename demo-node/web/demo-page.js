// The static demo's page (docs/static-demo.md): starts the authority's Worker, offers the pace,
// lists each decision the demo waits for (its WorkItem's goal or its Mission's title) and what
// the demo did, and hosts the console: `window.mwpDemo` (below) tells the console, once, at its
// start (app/src/web.rs `page_authority`), that its authority runs in this page, and carries its
// HTTP reads, `POST /api/commands` and `/ws` frames over the Worker's postMessage. This script
// signs nothing: the console does, with the key the visitor chooses.
const STRINGS = {
  en: {
    title: 'MissionWeave: the whole protocol in this page',
    notice: 'An in-browser authority for demonstration: the Group Authority and the demo’s Agents run in this tab, with keys generated here. Nothing leaves the page.',
    real: 'To run a real server with a durable store, from the repository:',
    pace: 'Pace', pause: 'Pause', real_time: 'Real time', faster: '4× faster', fastest: 'Fastest',
    clock: 'Demo clock:', gates: 'Awaiting a human decision', none: 'Nothing yet: the Agents are planning.',
    log: 'What the demo did', paused: 'paused',
    gate: 'Execution gate: ', final: 'Final approval: ',
  },
  fr: {
    title: 'MissionWeave : tout le protocole dans cette page',
    notice: 'Une autorité dans le navigateur, pour la démonstration : le Group Authority et les Agents de la démo s’exécutent dans cet onglet, avec des clés générées ici. Rien ne quitte la page.',
    real: 'Pour faire tourner un vrai serveur, avec un stockage durable, depuis le dépôt :',
    pace: 'Cadence', pause: 'Pause', real_time: 'Temps réel', faster: '4× plus vite', fastest: 'Au plus vite',
    clock: 'Horloge de la démo :', gates: 'En attente d’une décision humaine', none: 'Rien pour l’instant : les Agents planifient.',
    log: 'Ce que la démo a fait', paused: 'en pause',
    gate: 'Porte d’exécution : ', final: 'Approbation finale : ',
  },
  'zh-TW': {
    title: 'MissionWeave：整個協定就在這個頁面',
    notice: '這是在瀏覽器中執行的示範用 authority：Group Authority 與示範的 Agent 都在此分頁中執行，金鑰也在此產生。沒有任何資料離開此頁面。',
    real: '若要從儲存庫執行具持久儲存的真正伺服器：',
    pace: '步調', pause: '暫停', real_time: '即時', faster: '快 4 倍', fastest: '最快',
    clock: '示範時鐘：', gates: '等待人類決定', none: '目前沒有：Agent 正在規劃。',
    log: '示範做了什麼', paused: '已暫停',
    gate: '執行關卡：', final: '最終核准：',
  },
};
const lang = (navigator.languages || [navigator.language]).map((l) => {
  if (/^zh/i.test(l)) return 'zh-TW';
  return l.slice(0, 2).toLowerCase();
}).find((l) => STRINGS[l]) || 'en';
const T = STRINGS[lang];
document.documentElement.lang = lang === 'zh-TW' ? 'zh-Hant-TW' : lang;
for (const el of document.querySelectorAll('[data-t]')) el.textContent = T[el.dataset.t];

const MAX_LOG = 500;
const worker = new Worker(document.querySelector('meta[name="mwp-demo-worker"]').content, { type: 'module' });
const gates = document.getElementById('gates');
const log = document.getElementById('log');
const none = document.getElementById('none');

// The pace the visitor chose. While a console's HELLO is under way the Worker runs at real time
// at most: the challenge lasts 30 s of the authority's clock, which the fastest pace would spend
// before the console could answer (a session's end says HELLO again, the same way).
let chosen = 1;
const handshaking = new Set();
let sentPace = 1;
function applyPace() {
  const f = handshaking.size > 0 && (chosen === 'max' || chosen > 1) ? 1 : chosen;
  if (f === sentPace) return;
  sentPace = f;
  worker.postMessage({ type: 'pace', factor: f });
}

for (const b of document.querySelectorAll('button[data-pace]')) {
  b.setAttribute('aria-pressed', String(b.dataset.pace === '1'));
  b.addEventListener('click', () => {
    chosen = b.dataset.pace === 'max' ? 'max' : Number(b.dataset.pace);
    applyPace();
    for (const o of document.querySelectorAll('button[data-pace]')) o.setAttribute('aria-pressed', String(o === b));
  });
}

// The console's side of the Worker: its requests by id, its sockets by connection. Bounded: a
// console has a few requests and one socket at a time.
const MAX_WAITING = 256;
const MAX_CONNECTING = 16;
const waiting = new Map();
const sockets = new Map();
const connecting = [];
let nextId = 0;
const encoder = new TextEncoder();
// The authority's paced clock as the last status gave it, run forward at its pace between two.
const clock = { now: Date.now(), at: performance.now(), factor: 1, last: 0 };

const unb64u = (t) => Uint8Array.from(atob(t.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));

/// The Worker's answer as the server would send it: an Artifact's bytes (the Worker gives them
/// as `{mediaType, content}` in base64url), any other body as its UTF-8 text.
function answer(path, status, body) {
  if (status === 200 && path.startsWith('/api/artifacts/')) {
    try {
      return { status, body: unb64u(JSON.parse(body).content) };
    } catch {
      return { status: 502, body: encoder.encode('{"message":"unreadable Artifact"}') };
    }
  }
  return { status, body: encoder.encode(String(body)) };
}

/// A socket to the authority with a WebSocket's members (what app/src/socket/browser.rs uses).
function socket() {
  const s = {
    onopen: null,
    onmessage: null,
    onclose: null,
    conn: undefined,
    done: false,
    send(text) {
      if (!s.done && s.conn !== undefined) worker.postMessage({ type: 'send', conn: s.conn, text: String(text) });
    },
    close() {
      if (s.done) return;
      s.done = true;
      if (s.conn !== undefined) {
        sockets.delete(s.conn);
        handshaking.delete(s.conn);
        applyPace();
        worker.postMessage({ type: 'close', conn: s.conn });
      }
    },
  };
  if (connecting.length >= MAX_CONNECTING) {
    s.done = true;
    setTimeout(() => s.onclose && s.onclose(), 0);
    return s;
  }
  connecting.push(s);
  worker.postMessage({ type: 'connect' });
  return s;
}

window.mwpDemo = Object.freeze({
  request(method, path, body) {
    return new Promise((resolve) => {
      if (waiting.size >= MAX_WAITING) {
        resolve({ status: 503, body: encoder.encode('{"message":"too many requests waiting"}') });
        return;
      }
      const id = ++nextId;
      waiting.set(id, { resolve, path: String(path) });
      worker.postMessage(method === 'POST'
        ? { type: 'post', id, path: String(path), body: String(body) }
        : { type: 'get', id, path: String(path) });
    });
  },
  socket,
  now() {
    const t = typeof clock.factor === 'number' ? clock.now + (performance.now() - clock.at) * clock.factor : clock.now;
    clock.last = Math.max(clock.last, t);
    return clock.last;
  },
});

/// The console's messages: connections, frames, closes and answers.
function forConsole(m) {
  switch (m.type) {
    case 'connected': {
      const s = connecting.shift();
      if (!s || s.done) {
        worker.postMessage({ type: 'close', conn: m.conn });
        return;
      }
      s.conn = m.conn;
      sockets.set(m.conn, s);
      handshaking.add(m.conn);
      applyPace();
      if (s.onopen) s.onopen();
      return;
    }
    case 'refused': {
      const s = connecting.shift();
      if (s && !s.done) {
        s.done = true;
        if (s.onclose) s.onclose();
      }
      return;
    }
    case 'frame': {
      const s = sockets.get(m.conn);
      if (handshaking.has(m.conn) && m.text.includes('"server_accept"')) {
        handshaking.delete(m.conn);
        applyPace();
      }
      if (s && s.onmessage) s.onmessage({ data: m.text });
      return;
    }
    case 'closed': {
      const s = sockets.get(m.conn);
      handshaking.delete(m.conn);
      applyPace();
      if (!s) return;
      sockets.delete(m.conn);
      s.done = true;
      if (s.onclose) s.onclose();
      return;
    }
    case 'response': {
      const w = waiting.get(m.id);
      if (!w) return;
      waiting.delete(m.id);
      w.resolve(answer(w.path, m.status, m.body));
      return;
    }
    default:
  }
}

worker.onmessage = (e) => {
  const m = e.data;
  if (!m || typeof m !== 'object') return;
  if (m.type === 'error') {
    document.body.dataset.error = m.message;
    return;
  }
  if (m.type !== 'status') {
    forConsole(m);
    return;
  }
  Object.assign(clock, { now: m.now, at: performance.now(), factor: m.factor });
  document.getElementById('clock').textContent = new Date(m.now).toISOString().replace('.000Z', 'Z');
  document.getElementById('factor').textContent = m.factor === 0 ? T.paused : (m.factor === 'max' ? T.fastest : `${m.factor}×`);
  gates.replaceChildren(...m.gates.map((g) => {
    const li = document.createElement('li');
    li.dataset.key = g.key;
    li.dataset.kind = g.kind;
    // The decision's kind in the page's language; the WorkItem's goal or the Mission's title as
    // the demo wrote them (the console shows them the same way).
    li.textContent = g.kind === 'execution' ? T.gate + g.goal : T.final + g.title;
    li.title = g.description;
    return li;
  }));
  none.hidden = m.gates.length > 0;
  for (const line of m.lines) {
    const li = document.createElement('li');
    li.textContent = line;
    log.append(li);
  }
  while (log.children.length > MAX_LOG) log.firstElementChild.remove();
  document.body.dataset.gates = String(m.gates.length);
  document.body.dataset.finished = String(m.finished);
};
