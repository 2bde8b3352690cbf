// The static demo offline after the first load (issue 30, docs/static-demo.md): a service
// worker that caches every file of the folder. scripts/build-web.sh demo writes this file into
// dist-demo/ with the list of the folder's files and VERSION, a hash of their contents, so a
// new build is a new sw.js (the browser installs it) and a new cache, and the old one is
// deleted once the new one is complete. Any static file server, at any path prefix: every URL
// is relative to this file's own location (the registration's scope), and each copy of the demo
// on an origin owns only the caches named after its own scope.
//
// Strategy: the content-hashed files under pkg/ never change, so they come from the cache
// first; everything else (the page, the stylesheet) from the network first so that an online
// visitor always sees the newest build, and from the cache when the network fails.
const VERSION = '__OFFLINE_VERSION__';
const FILES = [/* __OFFLINE_FILES__ */];
const SCOPE = new URL('./', self.location).href;
const PREFIX = `mwp-demo ${SCOPE} `;
const CACHE = PREFIX + VERSION;

self.addEventListener('install', (e) => {
  // Each file fetched again past the HTTP cache, so the cache holds exactly this build.
  e.waitUntil(caches.open(CACHE)
    .then((c) => c.addAll(FILES.map((f) => new Request(new URL(f, SCOPE), { cache: 'reload' }))))
    .then(() => self.skipWaiting()));
});

self.addEventListener('activate', (e) => {
  e.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys
      .filter((k) => k.startsWith(PREFIX) && k !== CACHE)
      .map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

async function fromCache(request) {
  const c = await caches.open(CACHE);
  const hit = await c.match(request, { ignoreSearch: true });
  if (hit || request.mode !== 'navigate') return hit;
  // A navigation to the folder itself (`/demo/`) is its index.html.
  return c.match(new URL('index.html', SCOPE).href);
}

self.addEventListener('fetch', (e) => {
  const request = e.request;
  if (request.method !== 'GET' || !request.url.startsWith(SCOPE)) return;
  const immutable = new URL(request.url).pathname.includes('/pkg/');
  e.respondWith((async () => {
    if (immutable) {
      const hit = await fromCache(request);
      if (hit) return hit;
      return fetch(request);
    }
    try {
      return await fetch(request);
    } catch (err) {
      const hit = await fromCache(request);
      if (hit) return hit;
      throw err;
    }
  })());
});
