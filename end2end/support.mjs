// What the browser tests share (console.mjs, decide.mjs, notify.mjs): the Chromium switches,
// `check`, the keyboard navigation between views, and the sign-in through the join link the
// server prints, with a key generated in the browser.

export const TIMEOUT_MS = 30_000;
/// The passphrase every generated test key is stored under.
export const PASSPHRASE = 'correct horse battery staple';
export const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

/// Debian's Chromium, headless, with nothing that reaches out on its own.
export const launchArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export function check(cond, message) {
  if (!cond) throw new Error(message);
}

/// The join link the server at `base` prints for `name` with the enrolment `token`.
export function joinUrl(base, token, name) {
  return new URL(`/join#token=${encodeURIComponent(token)}&name=${encodeURIComponent(name)}`, base).href;
}

/// Signs in with a key generated in this browser through the join link (it fills in the name and
/// the enrolment token; enrolment is effective at once): from the link to the unlocked, enrolled
/// key, checking on the way that the link filled the form in and that the key was enrolled.
export async function signIn(page, { base, token, name = 'mission-owner' }) {
  await page.goto(joinUrl(base, token, name), { waitUntil: 'load', timeout: TIMEOUT_MS });
  await page.locator('#generate-form').waitFor({ state: 'visible', timeout: TIMEOUT_MS });
  check(await page.inputValue('#name') === name, `the join link's name: ${await page.inputValue('#name')}`);
  check(await page.inputValue('#enrol-token') === token, 'the join link did not fill the enrolment token in');
  await page.fill('#pass1', PASSPHRASE);
  await page.fill('#pass2', PASSPHRASE);
  await page.click('#generate');
  await page.locator('#key-unlocked').waitFor({ state: 'visible', timeout: TIMEOUT_MS });
  // The enrolment's outcome (not the "Generating…" note before it).
  const status = page.locator('#sign-in-status .state.ok, #sign-in-status .state.error');
  await status.first().waitFor({ state: 'visible', timeout: TIMEOUT_MS });
  const said = (await status.first().innerText()).trim();
  check(await page.locator('#sign-in-status .state.ok').count() === 1, `the key was not enrolled: ${said}`);
}

/// Opens the view of the `g` + `letter` shortcut (the page's focus out of any field first).
export async function go(page, letter) {
  await page.keyboard.press('Escape');
  await page.locator('body').click({ position: { x: 2, y: 2 } }).catch(() => {});
  await page.keyboard.press('g');
  await page.keyboard.press(letter);
  await page.waitForTimeout(300);
}
