// The console benchmark page in Debian's Chromium (scripts/bench-console.sh runs it): serves
// the page's directory (argument 1) on a free local port, opens it headless, waits for the
// page to finish and prints its `BENCH wasm …` lines. A benchmark: it prints figures and
// asserts nothing about time; it fails only if the page does not finish or reports an error.
import { chromium } from 'playwright-core';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(process.argv[2] || 'target/bench-console');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm',
  '.css': 'text/css', '.jsonl': 'application/x-ndjson', '.json': 'application/json' };
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://localhost');
  let file = path.join(root, decodeURIComponent(url.pathname));
  if (!file.startsWith(root) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    file = path.join(root, 'index.html');
  }
  res.writeHead(200, { 'content-type': types[path.extname(file)] || 'application/octet-stream' });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}/`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage'],
});
let failed = false;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on('pageerror', (e) => { console.log(`page error: ${e.message}`); failed = true; });
  await page.goto(`${base}bench`);
  await page.waitForSelector('#done', { timeout: 20 * 60 * 1000 });
  const text = await page.textContent('#results');
  console.log(text);
  if (/BENCH wasm error/.test(text)) failed = true;
  fs.mkdirSync('end2end/test-results', { recursive: true });
  await page.screenshot({ path: 'end2end/test-results/bench-console.png' });
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
