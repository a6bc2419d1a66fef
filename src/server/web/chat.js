// The chat tab: a conversation streamed from /v1/chat/completions, with a stop button (the
// request is aborted; the server cancels the generation when the client goes away) and a
// tokens/s figure from the usage the server reports at the end.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const log = $('log'), prompt = $('prompt'), send = $('send'), stop = $('stop'), speed = $('speed');
  let messages = [];
  let controller = null;

  function bubble(role, text) {
    const div = document.createElement('div');
    div.className = 'msg ' + role;
    div.textContent = text;
    log.appendChild(div);
    log.scrollTop = log.scrollHeight;
    return div;
  }

  function number(id) {
    const v = $(id).value.trim();
    return v === '' ? undefined : Number(v);
  }

  function request() {
    const system = $('system').value.trim();
    const body = {
      messages: system ? [{ role: 'system', content: system }, ...messages] : messages,
      stream: true,
      stream_options: { include_usage: true },
      temperature: number('temperature'),
      top_p: number('top-p'),
      top_k: number('top-k'),
      max_tokens: number('max-tokens'),
      seed: number('seed'),
    };
    return body;
  }

  async function submit() {
    const text = prompt.value.trim();
    if (!text || controller) return;
    prompt.value = '';
    messages.push({ role: 'user', content: text });
    bubble('user', text);
    const out = bubble('assistant', '');
    out.setAttribute('aria-busy', 'true');
    controller = new AbortController();
    send.disabled = true;
    stop.disabled = false;
    speed.textContent = '';
    const t0 = performance.now();
    let first = 0, chunks = 0, usage = null;
    try {
      await ringlm.stream('/v1/chat/completions', request(), controller.signal, (j) => {
        if (j.usage) usage = j.usage;
        const delta = j.choices && j.choices[0] && j.choices[0].delta;
        if (!delta || !delta.content) return;
        if (!first) first = performance.now();
        chunks++;
        out.textContent += delta.content;
        log.scrollTop = log.scrollHeight;
        const s = (performance.now() - first) / 1000;
        if (s > 0) speed.textContent = (chunks / s).toFixed(1) + ' tok/s';
      });
    } catch (e) {
      if (e.name !== 'AbortError') {
        if (!out.textContent) out.remove();
        bubble('error', e.message);
      }
    }
    out.removeAttribute('aria-busy');
    if (out.isConnected) messages.push({ role: 'assistant', content: out.textContent });
    else messages.pop();  // the request failed: the user's turn is not part of the conversation
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
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && controller) controller.abort(); });
  stop.addEventListener('click', () => controller && controller.abort());
  $('clear').addEventListener('click', () => {
    if (controller) controller.abort();
    messages = [];
    log.textContent = '';
    speed.textContent = '';
    prompt.focus();
  });
})();
