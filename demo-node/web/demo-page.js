// The static demo's page before the console hosts it (docs/static-demo.md, "What is built"):
// starts the authority's Worker, offers the pace, and lists each decision the demo waits for
// (its WorkItem's goal or its Mission's title) and what the demo did. The console, its in-page
// transport and the human's signed decisions are the next step; this page signs nothing.
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

for (const b of document.querySelectorAll('button[data-pace]')) {
  b.setAttribute('aria-pressed', String(b.dataset.pace === '1'));
  b.addEventListener('click', () => {
    const f = b.dataset.pace === 'max' ? 'max' : Number(b.dataset.pace);
    worker.postMessage({ type: 'pace', factor: f });
    for (const o of document.querySelectorAll('button[data-pace]')) o.setAttribute('aria-pressed', String(o === b));
  });
}

worker.onmessage = (e) => {
  const m = e.data;
  if (m.type === 'error') {
    document.body.dataset.error = m.message;
    return;
  }
  if (m.type !== 'status') return;
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
