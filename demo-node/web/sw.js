// The static demo offline after the first load (issue 30, docs/static-demo.md): a service
// worker that caches the demo's first view at install and every other file of the folder on its
// first use. scripts/build-web.sh demo writes this file into dist-demo/ with two lists of the
// folder's files and VERSION, a hash of all their contents, so a new build is a new sw.js (the
// browser installs it) and a new cache. The old build's cache is kept while a page of the old
// build is still open (at most KEEP_OLD of them; see prune), so that page still opens its views
// from it once the host has replaced the folder; it is deleted at a later activation or page
// load once no such page is left. Any static file server, at any path prefix: every URL is
// relative to this file's own location (the registration's scope), and each copy of the demo on
// an origin owns only the caches named after its own scope.
//
// FIRST (cached at install): the page, its stylesheets, the authority's Worker and module, the
// console's first view (app.js, app_bg.wasm, __wasm_split.js, boot.js, worker.js) and the
// chunks of the views the demo page opens at once. LATER (cached on first use): the console's
// other views' chunks and the bundle runner, kept once a visit has fetched them whole (a
// `200`). Nothing outside the two lists enters the cache. Offline, a view whose chunks were
// never fetched fails to load: the console shows its alert with a retry (app/src/routes/lazy.rs).
//
// Strategy: the content-hashed files under pkg/ never change, so they come from the cache
// first; everything else (the page, the stylesheets) from the network first so that an online
// visitor always sees the newest build, and from the cache when the network fails. A file under
// pkg/ that this build does not list is an old build's, asked for by a page of that build still
// open: it comes from that build's cache while it is kept, else from the network.
const VERSION = '__OFFLINE_VERSION__';
const FIRST = [/* __OFFLINE_FIRST__ */];
const LATER = [/* __OFFLINE_LATER__ */];
const SCOPE = new URL('./', self.location).href;
const PREFIX = `mwp-demo ${SCOPE} `;
const CACHE = PREFIX + VERSION;
const PKG = new URL('pkg/', SCOPE).href;
const href = (f) => new URL(f, SCOPE).href;
const LISTED = new Set([...FIRST, ...LATER].map(href));
// The content-hashed directory (`…/pkg/<hash>/`) of a URL under pkg/, else null. A directory is
// named after its contents, so a file of it is the same bytes in every build that has it, and
// the directories a page fetches from say which build it is.
const dirOf = (url) => {
  const end = url.startsWith(PKG) ? url.indexOf('/', PKG.length) : -1;
  return end < 0 ? null : url.slice(0, end + 1);
};
// This build's directories.
const DIRS = new Set([...LISTED].map(dirOf).filter(Boolean));
// How many old builds' caches are kept at most, for their pages still open: 1, the newest one
// that such a page needs. A page of a build older than that one falls back to the network.
const KEEP_OLD = 1;
// Which directories each client of this copy of the demo (a page, or a Worker of a page) has
// fetched from, by its clientId: one entry per open client, in a cache of its own (not named
// PREFIX…, so never taken for a build's cache) so that it outlives this worker's process, which
// the browser stops when idle. Written by whichever worker is in control; read by the next.
const PAGES = `mwp-demo-pages ${SCOPE}`;
const pageKey = (id) => new URL(`?mwp-page=${encodeURIComponent(id)}`, SCOPE).href;
// A client is listed by `clients.matchAll` only once it is execution-ready, after its first
// fetches (a module Worker fetches its imports before): an entry younger than this is kept
// while its client is not listed yet.
const YOUNG_MS = 60_000;
// What this process has written to PAGES already (clientId -> directories): one write per client
// and directory, not one per fetch.
const seen = new Map();
// PAGES and the caches are read and changed by one task at a time.
let queue = Promise.resolve();
const serial = (task) => {
  queue = queue.then(task).catch(() => {});
  return queue;
};

/// The older builds' caches of this copy of the demo, oldest first: those created before this
/// build's (CacheStorage keeps its names in the order they were created). A newer build's
/// cache, filled by its worker's install while this one still serves the pages, is never
/// this worker's to use or delete: the newer worker prunes this one's at its activation.
async function oldCaches() {
  const keys = (await caches.keys()).filter((k) => k.startsWith(PREFIX));
  const mine = keys.indexOf(CACHE);
  return mine < 0 ? [] : keys.slice(0, mine);
}

/// A file of another build, from the old builds' caches still kept (content-hashed files only:
/// the same URL is the same bytes in every build).
async function fromOld(key) {
  for (const name of (await oldCaches()).reverse()) {
    const hit = await (await caches.open(name)).match(key);
    if (hit) return hit;
  }
  return null;
}

/// Which old caches are still needed, and the others deleted (run at activation and whenever a
/// client not seen before fetches its first file: a page just loaded, so one that replaced a
/// page of the old build in its tab). A client belongs to a build by the directories it fetched
/// from, not by which worker controls it: a page loaded through the old worker may be the new
/// build's (the page is fetched from the network first), and a first visit's page is
/// controlled by no worker while it loads. So every client of the scope is listed, controlled
/// or not (`includeUncontrolled`: before `clients.claim()` this worker controls none). An old
/// cache is kept if an open client fetched from a directory this build does not have and that
/// cache holds files of it; a page with no entry (loaded before any worker of this code was in
/// control) keeps the newest old cache, as it may be an old build's. At most KEEP_OLD are kept.
/// The entries of clients no longer open are dropped (once older than YOUNG_MS), so PAGES holds
/// one per open client and per client that opened in the last minute.
async function prune() {
  const open = (await self.clients.matchAll({ type: 'all', includeUncontrolled: true }))
    .filter((c) => c.url.startsWith(SCOPE));
  const types = new Map(open.map((c) => [c.id, c.type]));
  const pages = await caches.open(PAGES);
  const recorded = new Set();
  const foreign = new Set();
  for (const entry of await pages.keys()) {
    const id = new URL(entry.url).searchParams.get('mwp-page');
    const stored = await pages.match(entry);
    const { dirs = [], at = 0 } = stored ? await stored.json().catch(() => ({})) : {};
    if (!types.has(id)) {
      if (Date.now() - at > YOUNG_MS) {
        await pages.delete(entry);
        seen.delete(id);
      }
      continue;
    }
    recorded.add(id);
    // The pages decide: a Worker lives only as long as its page, which fetched from the same
    // directories (its own files) when it loaded.
    if (types.get(id) !== 'window') continue;
    for (const d of dirs) if (!DIRS.has(d)) foreign.add(d);
  }
  const unknown = open.some((c) => c.type === 'window' && !recorded.has(c.id));
  let kept = 0;
  for (const name of (await oldCaches()).reverse()) {
    let keep = false;
    if (kept < KEEP_OLD && unknown) keep = true;
    else if (kept < KEEP_OLD && foreign.size > 0) {
      keep = (await (await caches.open(name)).keys()).some((r) => foreign.has(dirOf(r.url)));
    }
    if (keep) kept += 1;
    else await caches.delete(name);
  }
}

/// Records that client `id` fetched from the directory `dir`; for a client not recorded before,
/// then prunes. Null when there is nothing new to record.
function note(id, dir) {
  if (!id || !dir || (seen.has(id) && seen.get(id).has(dir))) return null;
  return serial(async () => {
    const pages = await caches.open(PAGES);
    const stored = await pages.match(pageKey(id));
    const { dirs: had = [], at = Date.now() } = stored ? await stored.json().catch(() => ({})) : {};
    const dirs = new Set(had);
    dirs.add(dir);
    await pages.put(pageKey(id), new Response(JSON.stringify({ dirs: [...dirs], at })));
    seen.set(id, dirs);
    if (!stored) await prune();
  });
}

self.addEventListener('install', (e) => {
  // The page and the stylesheets revalidated with the host (`no-cache`: a `304` where it sends
  // validators, so the copy the page has just loaded is not downloaded again, and never a stale
  // one), so the cache holds exactly this build; the content-hashed files may come from the HTTP
  // cache as they are (the page has just fetched them).
  e.waitUntil(caches.open(CACHE)
    .then((c) => c.addAll(FIRST.map((f) => new Request(href(f), { cache: f.startsWith('pkg/') ? 'default' : 'no-cache' }))))
    .then(() => self.skipWaiting()));
});

self.addEventListener('activate', (e) => {
  // The old caches still needed by an open page of an old build are kept (prune); then this
  // worker takes every page of the scope, the old build's too, whose files it serves from them.
  e.waitUntil(serial(prune).then(() => self.clients.claim()));
});

self.addEventListener('fetch', (e) => {
  const request = e.request;
  if (request.method !== 'GET' || !request.url.startsWith(SCOPE)) return;
  const url = new URL(request.url);
  url.search = '';
  url.hash = '';
  // A navigation to the folder itself (`/demo/`) is its index.html.
  const key = request.mode === 'navigate' && url.href === SCOPE ? href('index.html') : url.href;
  const pkg = key.startsWith(PKG);
  const noted = pkg ? note(e.clientId, dirOf(key)) : null;
  if (noted) e.waitUntil(noted);
  if (!LISTED.has(key)) {
    // Not a file of this build. Under pkg/, a file of another build: a page of an old build
    // still open after this one took over finds it in its build's cache, kept while it is open
    // (prune), else from the network, never cached. Anything else: the browser's own fetch.
    if (pkg) e.respondWith(fromOld(key).then((hit) => hit || fetch(request)));
    return;
  }
  e.respondWith((async () => {
    const cache = await caches.open(CACHE);
    if (pkg) {
      const hit = await cache.match(key);
      if (hit) return hit;
    }
    let response;
    try {
      // The page and the stylesheets revalidated with the host (a `304` where it sends
      // validators), as at install: from the HTTP cache as they are, a host that sends no
      // `Cache-Control` would give a page of an old build for a while (heuristic freshness),
      // and that page would be kept here as this build's.
      response = await fetch(pkg ? request : new Request(request, { cache: 'no-cache' }));
    } catch (err) {
      // Offline: this build's copy, else (a content-hashed file this build shares with an old
      // one, opened by a page of the old build) the old build's.
      const hit = (await cache.match(key)) || (pkg ? await fromOld(key) : null);
      if (hit) return hit;
      throw err;
    }
    // Kept on first use: a complete `200` of this origin only (not a `206` range, not an error
    // page); a body cut short makes `put` fail, and nothing is kept.
    if (response.status === 200 && response.type === 'basic') {
      e.waitUntil(cache.put(key, response.clone()).catch(() => {}));
    }
    return response;
  })());
});
