// The extraction tab: every row becomes one chat completion constrained by the JSON Schema
// (response_format json_schema), run one after another; each row's JSON and its validation
// show in the table, and the results download as JSONL like `ringlm extract` writes them.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const schemaBox = $('schema'), rowsBox = $('rows'), status = $('extract-status'), tbody = document.querySelector('#results tbody');
  const run = $('run-extract'), stop = $('stop-extract'), download = $('download');
  let results = [];
  let controller = null;

  const presets = {
    ticket: {  // examples/ticket.schema.json
      type: 'object',
      properties: {
        category: { type: 'string', enum: ['billing', 'technical', 'account', 'shipping', 'other'] },
        urgency: { type: 'string', enum: ['low', 'medium', 'high'] },
        customer_name: { type: ['string', 'null'], maxLength: 40 },
        order_id: { type: ['string', 'null'], pattern: '^[A-Z]{2}-[0-9]{4,8}$' },
        summary: { type: 'string', minLength: 1, maxLength: 120 },
      },
      required: ['category', 'urgency', 'customer_name', 'order_id', 'summary'],
      additionalProperties: false,
    },
    reasoning: {
      type: 'object',
      properties: { zeta_reasoning: { type: 'string', maxLength: 200 }, alpha_answer: { type: 'string', enum: ['yes', 'no'] } },
      required: ['zeta_reasoning', 'alpha_answer'],
      additionalProperties: false,
    },
  };
  $('schema-preset').addEventListener('change', (e) => {
    if (presets[e.target.value]) schemaBox.value = JSON.stringify(presets[e.target.value], null, 2);
  });
  if (!schemaBox.value) schemaBox.value = JSON.stringify(presets.ticket, null, 2);
  if (!rowsBox.value) {
    rowsBox.value = 'My order AB-1234 never arrived and I want a refund. - Dana\n' +
                    'The app crashes every time I open settings.';
  }

  async function readFile(file) { rowsBox.value = await file.text(); }
  $('rows-file').addEventListener('change', (e) => e.target.files[0] && readFile(e.target.files[0]));
  rowsBox.addEventListener('dragover', (e) => e.preventDefault());
  rowsBox.addEventListener('drop', (e) => {
    if (!e.dataTransfer.files.length) return;
    e.preventDefault();
    readFile(e.dataTransfer.files[0]);
  });

  // A line is a JSONL object (its "text" field, or the whole object, is the message) or plain text.
  function parseRows(text) {
    return text.split('\n').map((l) => l.trim()).filter(Boolean).map((line, i) => {
      try {
        const j = JSON.parse(line);
        if (j && typeof j === 'object' && !Array.isArray(j)) {
          return { id: j.id !== undefined ? String(j.id) : String(i + 1), text: typeof j.text === 'string' ? j.text : JSON.stringify(j) };
        }
      } catch (_) { /* plain text */ }
      return { id: String(i + 1), text: line };
    });
  }

  function cell(tr, content, cls) {
    const td = document.createElement('td');
    if (cls) td.className = cls;
    const pre = document.createElement('pre');
    pre.textContent = content;
    td.appendChild(pre);
    tr.appendChild(td);
  }

  run.addEventListener('click', async () => {
    let schema;
    try { schema = JSON.parse(schemaBox.value); } catch (e) { status.textContent = 'schema is not valid JSON: ' + e.message; return; }
    const rows = parseRows(rowsBox.value);
    if (!rows.length) { status.textContent = 'no rows'; return; }
    results = [];
    tbody.textContent = '';
    controller = new AbortController();
    run.disabled = true; stop.disabled = false; download.disabled = true;
    const system = $('instructions').value + '\n' + JSON.stringify(schema);
    const t0 = performance.now();
    let failed = 0;
    for (const [i, row] of rows.entries()) {
      if (controller.signal.aborted) break;
      status.textContent = 'row ' + (i + 1) + ' of ' + rows.length + '…';
      const tr = document.createElement('tr');
      cell(tr, String(row.id));
      cell(tr, row.text);
      const record = { id: row.id };
      try {
        const reply = await ringlm.post('/v1/chat/completions', {
          messages: [{ role: 'system', content: system }, { role: 'user', content: row.text }],
          response_format: { type: 'json_schema', json_schema: { name: 'extract', schema } },
          temperature: 0,
          max_tokens: Number($('extract-max-tokens').value) || 512,
        }, controller.signal);
        const text = reply.choices[0].message.content;
        record.finish = reply.choices[0].finish_reason;
        let value, problems;
        try { value = JSON.parse(text); problems = validateJson(value, schema); } catch (e) { problems = ['not complete JSON (finish: ' + record.finish + ')']; }
        record.ok = problems.length === 0;
        if (record.ok) record.output = value; else record.error = problems.join('; ');
        cell(tr, value !== undefined ? JSON.stringify(value, null, 1) : text);
        cell(tr, record.ok ? 'valid' : problems.join('\n'), record.ok ? 'ok' : 'bad');
      } catch (e) {
        if (e.name === 'AbortError') break;
        record.ok = false;
        record.error = e.message;
        cell(tr, '');
        cell(tr, e.message, 'bad');
      }
      if (!record.ok) failed++;
      tr.dataset.ok = String(record.ok);
      tbody.appendChild(tr);
      results.push(record);
    }
    const s = (performance.now() - t0) / 1000;
    status.textContent = results.length + ' rows (' + failed + ' failed) in ' + s.toFixed(1) + ' s';
    status.dataset.done = 'true';
    controller = null;
    run.disabled = false; stop.disabled = true; download.disabled = results.length === 0;
  });
  stop.addEventListener('click', () => controller && controller.abort());

  download.addEventListener('click', () => {
    const blob = new Blob([results.map((r) => JSON.stringify(r)).join('\n') + '\n'], { type: 'application/x-ndjson' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = 'extract.out.jsonl';
    a.click();
    URL.revokeObjectURL(a.href);
  });
})();
