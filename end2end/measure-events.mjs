// How many Events the Events view shows without scrolling at 1280×800 (issue 29), against a
// running `weave-console serve` with the demo: signs in as the demo's MissionOwner through the
// join link, waits for the live log, opens /events and prints one JSON line: the Event rows
// whose box lies wholly inside the window, the median row height, and any two table headers
// that overlap. Screenshot: end2end/test-results/events-measure-<theme>.png.
//
//   BASE_URL=http://127.0.0.1:PORT/ DEV_TOKEN=… node end2end/measure-events.mjs [light|dark]
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const base = process.env.BASE_URL || 'http://127.0.0.1:8080/';
const token = process.env.DEV_TOKEN || '';
const theme = process.argv[2] || 'light';
const resultsDir = join(here, 'test-results');
mkdirSync(resultsDir, { recursive: true });

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 }, colorScheme: theme });
  const page = await context.newPage();
  await page.goto(new URL(`/join#token=${encodeURIComponent(token)}&name=mission-owner`, base).href);
  await page.locator('#generate-form').waitFor({ state: 'visible' });
  await page.fill('#pass1', 'correct horse battery staple');
  await page.fill('#pass2', 'correct horse battery staple');
  await page.click('#generate');
  await page.locator('#sign-in-status .state.ok').waitFor({ state: 'visible', timeout: 60_000 });
  await page.locator('#conn-status[data-state="connected"]').waitFor({ timeout: 60_000 });
  // In-app navigation (g e) keeps the session's socket and log.
  await page.locator('body').click({ position: { x: 2, y: 2 } });
  await page.keyboard.press('g');
  await page.keyboard.press('e');
  await page.waitForFunction(() => document.querySelectorAll('#events-table tbody tr[data-event-id]').length >= 30, null, { timeout: 90_000 });
  await page.waitForTimeout(1000);
  const figures = await page.evaluate(() => {
    const rows = [...document.querySelectorAll('#events-table tbody tr[data-event-id]')].map((r) => r.getBoundingClientRect());
    const visible = rows.filter((r) => r.top >= 0 && r.bottom <= window.innerHeight).length;
    const heights = rows.map((r) => r.height).sort((a, b) => a - b);
    const ths = [...document.querySelectorAll('#events-table thead th')];
    const overlaps = [];
    for (const th of ths) {
      // The text's own extent (a header's words may run past its cell).
      const range = document.createRange();
      // The header's name (its first text node; the shared id prefix under it is cut with "…").
      range.selectNodeContents(th.firstChild && th.firstChild.nodeType === Node.TEXT_NODE ? th.firstChild : th);
      th.textBox = range.getBoundingClientRect();
    }
    for (let i = 1; i < ths.length; i += 1) {
      if (ths[i - 1].textBox.right > ths[i].getBoundingClientRect().left + 0.5) overlaps.push(`${ths[i - 1].firstChild.textContent.trim()} | ${ths[i].firstChild.textContent.trim()}`);
    }
    return { rows: rows.length, visible, medianRowHeight: heights[Math.floor(heights.length / 2)], headerOverlaps: overlaps };
  });
  await page.screenshot({ path: join(resultsDir, `events-measure-${theme}.png`) });
  console.log(JSON.stringify({ viewport: '1280x800', theme, ...figures }));
  await context.close();
} finally {
  await browser.close();
}
