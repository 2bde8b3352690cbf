// The static demo offline after the first load (issue 30, docs/static-demo.md): a service
// worker that caches the demo's first view at install and every other file of the folder on its
// first use. scripts/build-web.sh demo writes this file into dist-demo/ with two lists of the
// folder's files and VERSION, a hash of all their contents, so a new build is a new sw.js (the
// browser installs it) and a new cache, and the old one is deleted once the new one is
// complete. Any static file server, at any path prefix: every URL is relative to this file's
// own location (the registration's scope), and each copy of the demo on an origin owns only the
// caches named after its own scope.
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
// visitor always sees the newest build, and from the cache when the network fails.
const VERSION = '__OFFLINE_VERSION__';
const FIRST = [/* __OFFLINE_FIRST__ */];
const LATER = [/* __OFFLINE_LATER__ */];
const SCOPE = new URL('./', self.location).href;
const PREFIX = `mwp-demo ${SCOPE} `;
const CACHE = PREFIX + VERSION;
const PKG = new URL('pkg/', SCOPE).href;
const href = (f) => new URL(f, SCOPE).href;
const LISTED = new Set([...FIRST, ...LATER].map(href));

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
  e.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys
      .filter((k) => k.startsWith(PREFIX) && k !== CACHE)
      .map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

self.addEventListener('fetch', (e) => {
  const request = e.request;
  if (request.method !== 'GET' || !request.url.startsWith(SCOPE)) return;
  const url = new URL(request.url);
  url.search = '';
  url.hash = '';
  // A navigation to the folder itself (`/demo/`) is its index.html.
  const key = request.mode === 'navigate' && url.href === SCOPE ? href('index.html') : url.href;
  // Not a file of this build: the browser's own fetch, never cached.
  if (!LISTED.has(key)) return;
  e.respondWith((async () => {
    const cache = await caches.open(CACHE);
    if (key.startsWith(PKG)) {
      const hit = await cache.match(key);
      if (hit) return hit;
    }
    let response;
    try {
      response = await fetch(request);
    } catch (err) {
      const hit = await cache.match(key);
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
