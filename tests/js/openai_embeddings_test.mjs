// The official `openai` npm client's embeddings.create against a running `ringlm serve`
// (run by tests/server/openai_client_test.sh). The client asks for base64 by default and
// decodes it itself, so the default call checks the base64 form and an explicit "float" call
// the JSON numbers: both must give the same unit-length vector.
//
//   RINGLM_BASE_URL=http://127.0.0.1:PORT/v1 node openai_embeddings_test.mjs
import assert from "node:assert/strict";
import OpenAI from "openai";

import { check, finish } from "./checks.mjs";

const baseURL = process.env.RINGLM_BASE_URL;
if (!baseURL) {
  console.error("RINGLM_BASE_URL is not set");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: "not-needed", maxRetries: 0, timeout: 120_000 });
const model = (await client.models.list()).data[0].id;
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

await check("embeddings.create: base64 (the client's default) and float agree", async () => {
  const b = await client.embeddings.create({ model, input: "The ring buffer is full." });
  const f = await client.embeddings.create({ model, input: "The ring buffer is full.", encoding_format: "float" });
  assert.equal(b.object, "list");
  assert.equal(b.data.length, 1);
  assert.equal(b.data[0].object, "embedding");
  assert.equal(b.data[0].index, 0);
  const vb = Array.from(b.data[0].embedding), vf = f.data[0].embedding;
  assert.ok(vb.length > 0 && vb.length === vf.length, `${vb.length} vs ${vf.length} dimensions`);
  for (let i = 0; i < vb.length; i++) assert.equal(vb[i], Math.fround(vf[i]), `element ${i}`);
  assert.ok(Math.abs(norm(vf) - 1) < 1e-5, `unit length: ${norm(vf)}`);
  assert.ok(b.usage.prompt_tokens > 0 && b.usage.total_tokens === b.usage.prompt_tokens);
});

await check("embeddings.create: several inputs, in order, different vectors", async () => {
  const r = await client.embeddings.create({ model, input: ["first text", "second, other text", "first text"], encoding_format: "float" });
  assert.deepEqual(r.data.map((d) => d.index), [0, 1, 2]);
  assert.deepEqual(r.data[0].embedding, r.data[2].embedding);
  assert.ok(r.data[0].embedding.some((x, i) => Math.abs(x - r.data[1].embedding[i]) > 1e-4), "two inputs gave one vector");
});

await check("embeddings.create: bad input is a 400 naming the field", async () => {
  for (const [input, param] of [["", "input"], [[], "input"], [["ok", 7.5], "input[1]"]]) {
    try {
      await client.embeddings.create({ model, input, encoding_format: "float" });
      assert.fail(`accepted ${JSON.stringify(input)}`);
    } catch (err) {
      assert.ok(err instanceof OpenAI.APIError, `expected APIError, got ${err}`);
      assert.equal(err.status, 400);
      assert.equal(err.param, param);
    }
  }
});

finish("embeddings checks", baseURL);
