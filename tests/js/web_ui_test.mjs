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
  page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('blob:') && !r.url().startsWith('data:')) foreign.push(r.url()); });

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

  // An image attached to a message (issue #30): sent as an image_url part, named in the bubble.
  const image = process.env.RINGLM_TEST_IMAGE;
  if (image) {
    const input = await page.$('#attach');
    await input.uploadFile(image);
    await page.waitForFunction(() => document.getElementById('attached').textContent.length > 0, { timeout: 10000 });
    await page.type('#prompt', 'What is in this picture?');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant[data-done="true"]').length === 2, { timeout: 90000 });
    check((await page.$$('.msg.error')).length === 0, 'an image message gets a reply, no error');
    const tag = await page.$$eval('.msg.user .media', (els) => els.map((e) => e.textContent));
    check(tag.length === 1 && tag[0] === path.basename(image), 'the user bubble names the image: ' + JSON.stringify(tag));
  }

  // Replies render as Markdown through the escaping renderer: only its own tags.
  const foreignTags = await page.$$eval('.msg.assistant *', (els) =>
    els.map((e) => e.tagName.toLowerCase()).filter((t) => !['p', 'br', 'h3', 'h4', 'h5', 'ul', 'ol', 'li', 'pre', 'code', 'strong', 'em', 'a'].includes(t)));
  check(foreignTags.length === 0, 'assistant bubbles hold only the renderer\'s tags ' + JSON.stringify(foreignTags));
  const rendered = await page.evaluate(() => ringlmMarkdown.render('**b** <img src=x onerror=alert(1)>'));
  check(rendered === '<p><strong>b</strong> &lt;img src=x onerror=alert(1)&gt;</p>', 'markdown escapes raw HTML: ' + rendered);

  // The conversation survives a reload (localStorage), and "New chat" forgets it.
  const before = await page.$$eval('.msg', (els) => els.map((e) => e.className + ':' + e.textContent));
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction((n) => document.querySelectorAll('.msg').length === n, { timeout: 10000 }, before.length);
  const after = await page.$$eval('.msg', (els) => els.map((e) => e.className + ':' + e.textContent));
  check(JSON.stringify(after) === JSON.stringify(before), 'the conversation is back after a reload (' + after.length + ' messages)');
  await page.click('#clear');
  await page.reload({ waitUntil: 'load' });
  check((await page.$$('.msg')).length === 0, 'New chat forgets the conversation');
  const icon = await page.evaluate(async () => (await fetch('/favicon.ico')).status);
  check(icon === 200, '/favicon.ico is served');
  check(await page.$eval('#notice', (el) => el.hidden), 'no stand-in notice for a --model');

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

  // A stand-in model (the fake backend here, the demo model alike) is said at the top.
  const noticeBase = process.env.RINGLM_NOTICE_URL;
  if (noticeBase) {
    const other = await browser.newPage();
    other.on('pageerror', (e) => errors.push(e.message));
    await other.goto(noticeBase + '/', { waitUntil: 'load' });
    await other.waitForFunction(() => !document.getElementById('notice').hidden, { timeout: 10000 });
    const notice = await other.$eval('#notice', (el) => el.textContent);
    check(/stand-in|demo/.test(notice), 'the page says the model is a stand-in: ' + notice);
    await other.close();
  }

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
