// Registers the static demo's service worker (sw.js at the folder's root, docs/static-demo.md):
// after the first load the demo runs offline. A file, not an inline script (the CSP's
// `worker-src 'self'` covers it); its URL is relative to this file, so the folder works at any
// path prefix. Where service workers are unavailable (a `file:` URL, plain http off loopback),
// the demo simply stays online-only.
if ('serviceWorker' in navigator) {
  navigator.serviceWorker.register(new URL('../../sw.js', import.meta.url)).catch((err) => {
    document.documentElement.dataset.offline = `unavailable: ${err}`;
  });
}
