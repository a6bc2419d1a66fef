// Talking to the server: the API key (kept in this browser's localStorage), JSON requests,
// and an SSE reader for streamed chat completions. Also the tab switcher.
'use strict';

const ringlm = (() => {
  const keyInput = document.getElementById('api-key');
  keyInput.value = localStorage.getItem('ringlm-api-key') || '';
  keyInput.addEventListener('change', () => { localStorage.setItem('ringlm-api-key', keyInput.value); loadModel(); });

  function headers() {
    const h = { 'Content-Type': 'application/json' };
    if (keyInput.value) h.Authorization = 'Bearer ' + keyInput.value;
    return h;
  }

  // The server's error body is {"error":{"message":...}}; a 401 also points at the key field.
  async function failure(res) {
    let message = res.status + ' ' + res.statusText;
    try { message = (await res.json()).error.message; } catch (_) { /* not JSON */ }
    if (res.status === 401) { keyInput.focus(); message += ' (enter the API key at the top right)'; }
    return new Error(message);
  }

  async function post(path, body, signal) {
    const res = await fetch(path, { method: 'POST', headers: headers(), body: JSON.stringify(body), signal });
    if (!res.ok) throw await failure(res);
    return res.json();
  }

  // Calls onChunk(parsedJson) for every "data:" event until [DONE]; resolves when the stream ends.
  async function stream(path, body, signal, onChunk) {
    const res = await fetch(path, { method: 'POST', headers: headers(), body: JSON.stringify(body), signal });
    if (!res.ok) throw await failure(res);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (!event.startsWith('data: ')) continue;
        const data = event.slice(6);
        if (data === '[DONE]') return;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message);
        onChunk(j);
      }
    }
  }

  async function loadModel() {
    const label = document.getElementById('model');
    try {
      const res = await fetch('/v1/models', { headers: headers() });
      if (!res.ok) throw await failure(res);
      const m = (await res.json()).data[0];
      label.textContent = m.id + ' · context ' + m.context_length;
      loadNotice();
    } catch (e) {
      label.textContent = e.message;
    }
  }

  // /props says when the model is a stand-in (the built-in demo model's text is meaningless).
  async function loadNotice() {
    const notice = document.getElementById('notice');
    try {
      const res = await fetch('/props', { headers: headers() });
      if (!res.ok) return;
      const text = ((await res.json()).ringlm || {}).model_notice || '';
      notice.textContent = text;
      notice.hidden = !text;
    } catch (_) { /* an older server: no notice */ }
  }

  // Tabs: click or arrow keys.
  const tabs = [...document.querySelectorAll('[role=tab]')];
  function select(tab) {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      document.getElementById(t.getAttribute('aria-controls')).hidden = !on;
    }
    tab.focus();
  }
  tabs.forEach((t, i) => {
    t.addEventListener('click', () => select(t));
    t.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowRight') select(tabs[(i + 1) % tabs.length]);
      if (e.key === 'ArrowLeft') select(tabs[(i + tabs.length - 1) % tabs.length]);
    });
  });

  loadModel();
  return { post, stream };
})();
