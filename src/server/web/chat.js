// The chat tab: a conversation streamed from /v1/chat/completions, with a stop button (the
// request is aborted; the server cancels the generation when the client goes away) and a
// tokens/s figure from the usage the server reports at the end. Replies render as Markdown
// (markdown.js: escaped first, so no raw HTML); images and audio can be attached to a message
// (sent as image_url data URLs / input_audio parts); the conversation is kept in this
// browser's localStorage, so a reload shows it again ("New chat" forgets it).
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const log = $('log'), prompt = $('prompt'), send = $('send'), stop = $('stop'), speed = $('speed');
  const attach = $('attach'), attached = $('attached');
  const STORE = 'ringlm-chat';
  let messages = [];
  let pending = [];  // parts of the next message: {type:'image_url'|'input_audio', ..., name}
  let controller = null;

  function render(div, role, text) {
    if (role === 'assistant') div.innerHTML = ringlmMarkdown.render(text);
    else div.textContent = text;
  }

  // A message's text and the names of its media parts (content is a string or parts).
  function describe(content) {
    if (typeof content === 'string') return { text: content, media: [] };
    const text = content.filter((p) => p.type === 'text').map((p) => p.text).join('');
    return { text, media: content.filter((p) => p.type !== 'text').map((p) => p.name || p.type) };
  }

  function bubble(role, content) {
    const div = document.createElement('div');
    div.className = 'msg ' + role;
    const { text, media } = describe(content);
    render(div, role, text);
    for (const name of media) {
      const tag = document.createElement('span');
      tag.className = 'media';
      tag.textContent = name;
      div.appendChild(tag);
    }
    log.appendChild(div);
    log.scrollTop = log.scrollHeight;
    return div;
  }

  // Saved without media bytes when they do not fit the browser's quota.
  function save() {
    try {
      localStorage.setItem(STORE, JSON.stringify(messages));
    } catch (_) {
      const light = messages.map((m) => ({ role: m.role, content: describe(m.content).text }));
      try { localStorage.setItem(STORE, JSON.stringify(light)); } catch (__) { /* storage unavailable */ }
    }
  }

  function restore() {
    try {
      const saved = JSON.parse(localStorage.getItem(STORE) || '[]');
      if (Array.isArray(saved)) messages = saved.filter((m) => m && typeof m.role === 'string');
    } catch (_) { messages = []; }
    for (const m of messages) bubble(m.role, m.content).dataset.done = 'true';
  }

  function number(id) {
    const v = $(id).value.trim();
    return v === '' ? undefined : Number(v);
  }

  // What the server gets: media parts without the page's own `name` field.
  const wire = (m) => (typeof m.content === 'string' ? m
    : { role: m.role, content: m.content.map(({ name, ...part }) => part) });

  function request() {
    const system = $('system').value.trim();
    const history = messages.map(wire);
    return {
      messages: system ? [{ role: 'system', content: system }, ...history] : history,
      stream: true,
      stream_options: { include_usage: true },
      temperature: number('temperature'),
      top_p: number('top-p'),
      top_k: number('top-k'),
      max_tokens: number('max-tokens'),
      seed: number('seed'),
    };
  }

  function readFile(file) {
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(reader.result);
      reader.onerror = () => reject(reader.error);
      reader.readAsDataURL(file);
    });
  }

  const AUDIO = { 'audio/wav': 'wav', 'audio/x-wav': 'wav', 'audio/wave': 'wav', 'audio/mpeg': 'mp3', 'audio/mp3': 'mp3',
                  'audio/flac': 'flac', 'audio/x-flac': 'flac', 'audio/ogg': 'ogg', 'audio/opus': 'opus' };

  async function addFiles(files) {
    for (const file of files) {
      const url = await readFile(file);
      if (file.type.startsWith('image/')) {
        pending.push({ type: 'image_url', image_url: { url }, name: file.name });
      } else if (AUDIO[file.type]) {
        pending.push({ type: 'input_audio', input_audio: { data: url.slice(url.indexOf(',') + 1), format: AUDIO[file.type] },
                       name: file.name });
      } else {
        bubble('error', file.name + ': not an image or a wav/mp3/flac/ogg/opus audio file');
      }
    }
    attached.textContent = pending.map((p) => p.name).join(', ');
  }

  async function submit() {
    const text = prompt.value.trim();
    if ((!text && !pending.length) || controller) return;
    prompt.value = '';
    const content = pending.length ? [...pending, { type: 'text', text }] : text;
    pending = [];
    attached.textContent = '';
    messages.push({ role: 'user', content });
    bubble('user', content);
    const out = bubble('assistant', '');
    out.setAttribute('aria-busy', 'true');
    controller = new AbortController();
    send.disabled = true;
    stop.disabled = false;
    speed.textContent = '';
    const t0 = performance.now();
    let first = 0, chunks = 0, usage = null, reply = '';
    try {
      await ringlm.stream('/v1/chat/completions', request(), controller.signal, (j) => {
        if (j.usage) usage = j.usage;
        const delta = j.choices && j.choices[0] && j.choices[0].delta;
        if (!delta || !delta.content) return;
        if (!first) first = performance.now();
        chunks++;
        reply += delta.content;
        render(out, 'assistant', reply);
        log.scrollTop = log.scrollHeight;
        const s = (performance.now() - first) / 1000;
        if (s > 0) speed.textContent = (chunks / s).toFixed(1) + ' tok/s';
      });
    } catch (e) {
      if (e.name !== 'AbortError') {
        if (!reply) out.remove();
        bubble('error', e.message);
      }
    }
    out.removeAttribute('aria-busy');
    if (out.isConnected) messages.push({ role: 'assistant', content: reply });
    else messages.pop();  // the request failed: the user's turn is not part of the conversation
    save();
    const end = performance.now();
    if (usage && first && usage.completion_tokens > 1) {
      const rate = (usage.completion_tokens - 1) / ((end - first) / 1000);
      speed.textContent = usage.completion_tokens + ' tokens · ' + rate.toFixed(1) + ' tok/s · first token ' +
                          ((first - t0) / 1000).toFixed(2) + ' s';
    } else if (controller.signal.aborted) {
      speed.textContent = 'stopped';
    }
    out.dataset.done = 'true';
    controller = null;
    send.disabled = false;
    stop.disabled = true;
    prompt.focus();
  }

  $('chat-form').addEventListener('submit', (e) => { e.preventDefault(); submit(); });
  prompt.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); submit(); }
  });
  attach.addEventListener('change', () => { addFiles([...attach.files]).finally(() => { attach.value = ''; }); });
  log.addEventListener('dragover', (e) => e.preventDefault());
  log.addEventListener('drop', (e) => { e.preventDefault(); addFiles([...e.dataTransfer.files]); });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && controller) controller.abort(); });
  stop.addEventListener('click', () => controller && controller.abort());
  $('clear').addEventListener('click', () => {
    if (controller) controller.abort();
    messages = [];
    pending = [];
    attached.textContent = '';
    localStorage.removeItem(STORE);
    log.textContent = '';
    speed.textContent = '';
    prompt.focus();
  });
  restore();
})();
