// Drives the page `ringlm serve` answers at / in headless Chromium (Debian's chromium, over
// the DevTools protocol with puppeteer-core): enters the API key, sends a chat message and
// watches the reply arrive in several pieces, stops nothing, then runs a two-row extraction
// in the playground and checks each row's JSON validated. Screenshots go to
// RINGLM_SCREENSHOT_DIR. Usage: RINGLM_BASE_URL=http://127.0.0.1:PORT RINGLM_API_KEY=... node web_ui_test.mjs
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const base = process.env.RINGLM_BASE_URL;
const key = process.env.RINGLM_API_KEY || '';
const shots = process.env.RINGLM_SCREENSHOT_DIR || os.tmpdir();
const chromium = process.env.RINGLM_CHROMIUM || '/usr/bin/chromium';
if (!base) throw new Error('RINGLM_BASE_URL is required');

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ringlm-chromium-'));
const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  userDataDir: profile,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); console.log((ok ? 'ok   ' : 'FAIL ') + what); };

try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1000, height: 720 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // Everything the page loads must come from the server itself.
  const foreign = [];
  page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('blob:')) foreign.push(r.url()); });

  await page.goto(base + '/', { waitUntil: 'load' });
  if (key) {
    // The page asks for the key: without it the model label shows the 401 message.
    await page.waitForFunction(() => /API key/.test(document.getElementById('model').textContent), { timeout: 10000 });
    check(true, 'without the key the page reports the 401');
    await page.type('#api-key', key);
    await page.$eval('#api-key', (el) => el.dispatchEvent(new Event('change')));
  }
  await page.waitForFunction(() => /context \d+/.test(document.getElementById('model').textContent), { timeout: 10000 });
  check(true, 'the page shows the model after the key');

  // Chat: count how often the reply's text grows, to see it stream.
  await page.$eval('#settings', (d) => { d.open = true; });
  await page.$eval('#system', (el) => { el.value = 'You answer briefly.'; });
  await page.$eval('#max-tokens', (el) => { el.value = '96'; });
  await page.$eval('#temperature', (el) => { el.value = '0'; });
  await page.evaluate(() => {
    window.__updates = 0;
    new MutationObserver(() => { window.__updates++; }).observe(document.getElementById('log'), { childList: true, subtree: true, characterData: true });
  });
  await page.type('#prompt', 'Hello! What is a ring buffer?');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.msg.assistant[data-done="true"]', { timeout: 60000 });
  const reply = await page.$eval('.msg.assistant', (el) => el.textContent);
  const updates = await page.evaluate(() => window.__updates);
  const speed = await page.$eval('#speed', (el) => el.textContent);
  check(reply.length > 0, 'a reply arrived (' + reply.length + ' characters)');
  check(updates >= 3, 'the reply streamed in pieces (' + updates + ' updates)');
  check(/tok\/s/.test(speed), 'tokens/s is shown: ' + speed);
  check((await page.$$('.msg.error')).length === 0, 'no error bubble');
  await page.screenshot({ path: path.join(shots, 'web-ui-chat.png') });

  // Extraction playground: two rows against the ticket schema.
  await page.click('#tab-extract');
  await page.select('#schema-preset', 'ticket');
  await page.$eval('#rows', (el) => {
    el.value = '{"id":"a","text":"Order AB-1234 never arrived, please refund. - Dana"}\n' +
               '{"id":"b","text":"I cannot log in since the update."}';
  });
  await page.click('#run-extract');
  await page.waitForSelector('#extract-status[data-done="true"]', { timeout: 60000 });
  const rows = await page.$$eval('#results tbody tr', (trs) => trs.map((tr) => ({
    ok: tr.dataset.ok, output: tr.children[2].textContent, valid: tr.children[3].textContent })));
  check(rows.length === 2, 'two extraction rows (' + rows.length + ')');
  for (const [i, r] of rows.entries()) {
    let parsed = null;
    try { parsed = JSON.parse(r.output); } catch (_) { /* checked below */ }
    check(r.ok === 'true' && r.valid === 'valid', 'row ' + (i + 1) + ' validated: ' + r.valid);
    check(parsed && ['billing', 'shipping', 'technical', 'account', 'other'].includes(parsed.category),
          'row ' + (i + 1) + ' has a category from the enum');
  }
  check(!(await page.$eval('#download', (b) => b.disabled)), 'download is enabled');
  await page.screenshot({ path: path.join(shots, 'web-ui-extract.png'), fullPage: true });

  check(errors.length === 0, 'no script errors ' + JSON.stringify(errors));
  check(foreign.length === 0, 'nothing loaded from elsewhere ' + JSON.stringify(foreign));
} finally {
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
if (failures.length) {
  console.error(failures.length + ' check(s) failed');
  process.exit(1);
}
console.log('web UI checks passed');
