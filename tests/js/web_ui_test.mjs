// Drives the page `ringlm serve` answers at / in headless Chromium (Debian's chromium, over
// the DevTools protocol with puppeteer-core), against the built-in demo model (--api-key):
//   - the API key, the demo-model notice, <link rel=icon> and /favicon.ico;
//   - a streamed chat reply from the model, with a user message holding <script> and an
//     <img onerror> that must show as text and never run;
//   - a reply with Markdown and raw HTML, streamed to the page through its own fetch/SSE code
//     (the body is canned by request interception: the random demo model writes no Markdown):
//     Markdown becomes the renderer's tags, the HTML stays text and never runs;
//   - an attached image that really arrives in the request body (intercepted, then sent on),
//     byte for byte as a data: URL;
//   - the conversation back after a reload (localStorage), and forgotten by "New chat";
//   - a two-row extraction;
//   - no notice on a second server that runs a --model (RINGLM_NOTICE_URL).
// Screenshots (one per feature) go to RINGLM_SCREENSHOT_DIR.
// Usage: RINGLM_BASE_URL=http://127.0.0.1:PORT RINGLM_API_KEY=... node web_ui_test.mjs
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const base = process.env.RINGLM_BASE_URL;
const key = process.env.RINGLM_API_KEY || '';
const shots = process.env.RINGLM_SCREENSHOT_DIR || os.tmpdir();
const chromium = process.env.RINGLM_CHROMIUM || '/usr/bin/chromium';
if (!base) throw new Error('RINGLM_BASE_URL is required');
fs.mkdirSync(shots, { recursive: true });

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
const shot = (page, name) => page.screenshot({ path: path.join(shots, name) });

// A reply as the server streams it: chat.completion.chunk events, a few characters each.
function cannedStream(text) {
  const chunk = (delta, extra = {}) => 'data: ' + JSON.stringify({
    id: 'chatcmpl-canned', object: 'chat.completion.chunk', created: 0, model: 'canned',
    choices: [{ index: 0, delta, finish_reason: null }], ...extra }) + '\n\n';
  let body = chunk({ role: 'assistant', content: '' });
  for (let i = 0; i < text.length; i += 7) body += chunk({ content: text.slice(i, i + 7) });
  body += chunk({}, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  return body + 'data: [DONE]\n\n';
}
const HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">';
const MARKDOWN = '# Ring buffers\n\nA **ring buffer** keeps the *last* `n` items:\n\n- it never grows\n- it overwrites the oldest\n\n' +
                 '```\nbuf[i % n] = x;\n```\n\n' + HOSTILE + ' and <b>no raw tags</b>.';

try {
  const page = await browser.newPage();
  await page.setViewport({ width: 900, height: 600 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // Everything the page loads must come from the server itself.
  const foreign = [];
  page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('blob:') && !r.url().startsWith('data:')) foreign.push(r.url()); });
  // Chat requests pass through here: `intercept` decides (canned reply, or inspect and continue).
  let intercept = null;
  await page.setRequestInterception(true);
  page.on('request', (r) => {
    if (intercept && r.method() === 'POST' && r.url().endsWith('/v1/chat/completions')) return intercept(r);
    return r.continue();
  });

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

  // The built-in demo model is said at the top.
  await page.waitForFunction(() => !document.getElementById('notice').hidden, { timeout: 10000 });
  const notice = await page.$eval('#notice', (el) => el.textContent);
  check(/demo model/.test(notice) && /random/.test(notice), 'the demo-model notice is shown: ' + notice);
  await shot(page, 'web-ui-demo-notice.png');
  const icons = await page.evaluate(async () => {
    const link = document.querySelector('link[rel~="icon"]');
    return { href: link && link.getAttribute('href'), linked: link ? (await fetch(link.href)).status : 0,
             ico: (await fetch('/favicon.ico')).status };
  });
  check(icons.href && icons.linked === 200, '<link rel=icon> is there and loads: ' + JSON.stringify(icons));
  check(icons.ico === 200, '/favicon.ico is served');

  // A real reply from the model, to a user message with HTML in it: shown as text, not run.
  await page.$eval('#settings', (d) => { d.open = true; });
  await page.$eval('#system', (el) => { el.value = 'You answer briefly.'; });
  await page.$eval('#max-tokens', (el) => { el.value = '64'; });
  await page.$eval('#temperature', (el) => { el.value = '0'; });
  await page.$eval('#settings', (d) => { d.open = false; });
  await page.evaluate(() => {
    window.__updates = 0;
    new MutationObserver(() => { window.__updates++; }).observe(document.getElementById('log'), { childList: true, subtree: true, characterData: true });
  });
  await page.type('#prompt', 'What is a ring buffer? ' + HOSTILE);
  await page.keyboard.press('Enter');
  await page.waitForSelector('.msg.assistant[data-done="true"]', { timeout: 60000 });
  const reply = await page.$eval('.msg.assistant', (el) => el.textContent);
  const updates = await page.evaluate(() => window.__updates);
  const speed = await page.$eval('#speed', (el) => el.textContent);
  check(reply.length > 0, 'a reply arrived (' + reply.length + ' characters)');
  check(updates >= 3, 'the reply streamed in pieces (' + updates + ' updates)');
  check(/tok\/s/.test(speed), 'tokens/s is shown: ' + speed);
  check((await page.$$('.msg.error')).length === 0, 'no error bubble');
  const userBubble = await page.$eval('.msg.user', (el) => ({ text: el.textContent, tags: el.querySelectorAll('*').length }));
  check(userBubble.text.includes(HOSTILE) && userBubble.tags === 0, 'the user\'s HTML is shown as text: ' + JSON.stringify(userBubble));
  await shot(page, 'web-ui-chat.png');

  // A reply with Markdown and raw HTML, through the page's streaming code.
  let cannedSent = false;
  intercept = (r) => {
    cannedSent = true;
    return r.respond({ status: 200, contentType: 'text/event-stream', body: cannedStream(MARKDOWN) });
  };
  await page.type('#prompt', 'Explain ring buffers with some Markdown.');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelectorAll('.msg.assistant[data-done="true"]').length === 2, { timeout: 20000 });
  intercept = null;
  const md = await page.$$eval('.msg.assistant', (els) => {
    const el = els[els.length - 1];
    const q = (s) => [...el.querySelectorAll(s)].map((e) => e.textContent);
    return { h3: q('h3'), strong: q('strong'), em: q('em'), code: q('p code'), li: q('li'), pre: q('pre'),
             raw: q('script, img, b, iframe, style').length, text: el.textContent };
  });
  check(cannedSent, 'the Markdown reply went through the page\'s request');
  check(md.h3[0] === 'Ring buffers' && md.strong[0] === 'ring buffer' && md.em[0] === 'last' && md.code[0] === 'n',
        'Markdown is rendered (heading, bold, italic, code): ' + JSON.stringify(md));
  check(md.li.length === 2 && md.pre.length === 1 && md.pre[0] === 'buf[i % n] = x;', 'lists and code blocks are rendered');
  check(md.raw === 0 && md.text.includes(HOSTILE) && md.text.includes('<b>no raw tags</b>'),
        'raw HTML in a reply stays text (no <script>, <img>, <b> element)');
  await page.$eval('#log', (el) => { el.scrollTop = el.scrollHeight; });
  await shot(page, 'web-ui-markdown.png');

  // An attached image: it must be in the request body, byte for byte.
  const image = process.env.RINGLM_TEST_IMAGE;
  if (image) {
    let sentImage = null;
    intercept = (r) => {
      try {
        const last = JSON.parse(r.postData()).messages.at(-1);
        const part = Array.isArray(last.content) ? last.content.find((p) => p.type === 'image_url') : null;
        sentImage = part ? part.image_url.url : '';
      } catch (e) { sentImage = 'unparsable: ' + e.message; }
      return r.continue();
    };
    const input = await page.$('#attach');
    await input.uploadFile(image);
    await page.waitForFunction(() => document.getElementById('attached').textContent.length > 0, { timeout: 10000 });
    await page.type('#prompt', 'What is in this picture?');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant[data-done="true"]').length === 3, { timeout: 90000 });
    intercept = null;
    const want = 'data:image/png;base64,' + fs.readFileSync(image).toString('base64');
    check(sentImage === want, 'the image is in the request body as a data: URL of its bytes (' +
          (sentImage ? sentImage.length : 0) + ' of ' + want.length + ' characters)');
    check((await page.$$('.msg.error')).length === 0, 'an image message gets a reply, no error');
    const tag = await page.$$eval('.msg.user .media', (els) => els.map((e) => e.textContent));
    check(tag.length === 1 && tag[0] === path.basename(image), 'the user bubble names the image: ' + JSON.stringify(tag));
    await page.$eval('#log', (el) => { el.scrollTop = el.scrollHeight; });
    await shot(page, 'web-ui-upload.png');
  }

  // Replies render only the renderer's own tags.
  const foreignTags = await page.$$eval('.msg.assistant *', (els) =>
    els.map((e) => e.tagName.toLowerCase()).filter((t) => !['p', 'br', 'h3', 'h4', 'h5', 'ul', 'ol', 'li', 'pre', 'code', 'strong', 'em', 'a'].includes(t)));
  check(foreignTags.length === 0, 'assistant bubbles hold only the renderer\'s tags ' + JSON.stringify(foreignTags));

  // The conversation survives a reload (localStorage), Markdown and all, and "New chat" forgets it.
  const before = await page.$$eval('.msg', (els) => els.map((e) => e.className + ':' + e.innerHTML));
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction((n) => document.querySelectorAll('.msg').length === n, { timeout: 10000 }, before.length);
  const after = await page.$$eval('.msg', (els) => els.map((e) => e.className + ':' + e.innerHTML));
  check(JSON.stringify(after) === JSON.stringify(before), 'the conversation is back after a reload (' + after.length + ' messages, same markup)');
  await page.$eval('#log', (el) => { el.scrollTop = 0; });
  await shot(page, 'web-ui-restored.png');
  check(await page.evaluate(() => window.__pwned === undefined), 'no script from a message ever ran');
  await page.click('#clear');
  await page.reload({ waitUntil: 'load' });
  check((await page.$$('.msg')).length === 0, 'New chat forgets the conversation');

  // Extraction playground: two rows against the ticket schema.
  await page.setViewport({ width: 1000, height: 720 });
  // The tab's handler is attached by the page's script after load: click until the panel shows
  // (one click right after a reload could land before it, and the panel stayed hidden).
  await page.waitForSelector('#tab-extract', { visible: true, timeout: 10000 });
  for (let i = 0; i < 50 && await page.$eval('#extract', (el) => el.hidden); ++i) {
    await page.click('#tab-extract');
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.waitForSelector('#run-extract', { visible: true, timeout: 10000 });
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

  // A server that runs a --model has no notice.
  const plainBase = process.env.RINGLM_NOTICE_URL;
  if (plainBase) {
    const other = await browser.newPage();
    other.on('pageerror', (e) => errors.push(e.message));
    await other.goto(plainBase + '/', { waitUntil: 'load' });
    await other.waitForFunction(() => /context \d+/.test(document.getElementById('model').textContent), { timeout: 10000 });
    const props = await other.evaluate(async () => (await (await fetch('/props')).json()).ringlm.model_notice);
    check(props === '' && await other.$eval('#notice', (el) => el.hidden), 'no notice for a --model: ' + JSON.stringify(props));
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
