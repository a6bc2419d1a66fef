// Drives a running `ringlm serve` with the official `openai` npm client.
//
//   RINGLM_BASE_URL=http://127.0.0.1:PORT/v1 RINGLM_TEST_MODE=fake|real node openai_client_test.mjs
//
// Asserts response shapes and invariants that hold for any model (so the same script runs
// against the fake backend and a real checkpoint). In `fake` mode it also insists on what the
// fake always does (e.g. it always calls the first tool offered).
import assert from "node:assert/strict";
import OpenAI from "openai";

import { check, finish } from "./checks.mjs";

const baseURL = process.env.RINGLM_BASE_URL;
const mode = process.env.RINGLM_TEST_MODE || "real";
if (!baseURL) {
  console.error("RINGLM_BASE_URL is not set");
  process.exit(2);
}
const fake = mode === "fake";
const client = new OpenAI({ baseURL, apiKey: "not-needed", maxRetries: 0, timeout: 120_000 });


function assertUsage(usage, maxCompletion) {
  assert.ok(Number.isInteger(usage.prompt_tokens) && usage.prompt_tokens > 0, "prompt_tokens");
  assert.ok(Number.isInteger(usage.completion_tokens) && usage.completion_tokens >= 0, "completion_tokens");
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  if (maxCompletion !== undefined) assert.ok(usage.completion_tokens <= maxCompletion, "completion_tokens <= max_tokens");
}

const user = (text) => [{ role: "user", content: text }];
let model = "";

await check("models.list / retrieve", async () => {
  const list = await client.models.list();
  assert.ok(list.data.length >= 1);
  assert.equal(list.data[0].object, "model");
  model = list.data[0].id;
  assert.ok(typeof model === "string" && model.length > 0);
  const one = await client.models.retrieve(model);
  assert.equal(one.id, model);
  await expectApiError(client.models.retrieve("no-such-model"), 404);
});

let plainContent = null;
await check("chat plain", async () => {
  const r = await client.chat.completions.create({ model, messages: user("Say hello."), max_tokens: 16, temperature: 0, seed: 1 });
  assert.equal(r.object, "chat.completion");
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.choices.length, 1);
  const c = r.choices[0];
  assert.equal(c.message.role, "assistant");
  assert.equal(typeof c.message.content, "string");
  assert.ok(["stop", "length"].includes(c.finish_reason), c.finish_reason);
  assertUsage(r.usage, 16);
  plainContent = c.message.content;
});

await check("chat streamed (same text as non-streamed, usage chunk)", async () => {
  const stream = await client.chat.completions.create({
    model, messages: user("Say hello."), max_tokens: 16, temperature: 0, seed: 1,
    stream: true, stream_options: { include_usage: true },
  });
  let text = "";
  let finish = null;
  let usage = null;
  let chunks = 0;
  let role = null;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, "chat.completion.chunk");
    if (chunk.usage) usage = chunk.usage;
    if (!chunk.choices.length) continue;
    const ch = chunk.choices[0];
    if (ch.delta.role) role = ch.delta.role;
    if (typeof ch.delta.content === "string") text += ch.delta.content;
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  assert.ok(chunks >= 2);
  assert.equal(role, "assistant");
  assert.ok(["stop", "length"].includes(finish), String(finish));
  assert.ok(usage, "usage chunk");
  assertUsage(usage, 16);
  // Greedy decoding of the same prompt gives the same text, streamed or not. Only asserted for
  // the fake: a real engine may reuse a cached prefix the second time, and rounding differences
  // between cached and recomputed KV can flip a near-tie of random weights.
  if (fake && plainContent !== null) assert.equal(text, plainContent);
  assert.ok(usage.completion_tokens > 0 || text === "");
});

const personSchema = {
  type: "object",
  properties: { name: { type: "string" }, age: { type: "integer" } },
  required: ["name", "age"],
  additionalProperties: false,
};

await check("chat json_schema", async () => {
  const r = await client.chat.completions.create({
    model, messages: user("Extract: Ada Lovelace was 36."), max_tokens: 128, temperature: 0,
    response_format: { type: "json_schema", json_schema: { name: "person", schema: personSchema, strict: true } },
  });
  const c = r.choices[0];
  if (fake) assert.equal(c.finish_reason, "stop");
  if (c.finish_reason === "stop") {
    const value = JSON.parse(c.message.content);
    assert.equal(typeof value.name, "string");
    assert.ok(Number.isInteger(value.age));
    assert.deepEqual(Object.keys(value).sort(), ["age", "name"]);
  }
});

await check("chat json_object", async () => {
  const r = await client.chat.completions.create({
    model, messages: user("Reply in JSON."), max_tokens: 64, temperature: 0, response_format: { type: "json_object" },
  });
  const c = r.choices[0];
  if (c.finish_reason === "stop") assert.equal(typeof JSON.parse(c.message.content), "object");
});

const tools = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
}];

function assertToolCalls(calls) {
  assert.ok(Array.isArray(calls) && calls.length >= 1);
  for (const call of calls) {
    assert.equal(typeof call.id, "string");
    assert.ok(call.id.length > 0);
    assert.equal(call.type, "function");
    assert.equal(call.function.name, "get_weather");
    const args = JSON.parse(call.function.arguments);
    assert.equal(typeof args, "object");
  }
}

await check("chat tools", async () => {
  const r = await client.chat.completions.create({
    model, messages: user("What is the weather in Paris?"), max_tokens: 128, temperature: 0, tools, tool_choice: "auto",
  });
  const c = r.choices[0];
  assert.equal(c.message.role, "assistant");
  if (fake) assert.equal(c.finish_reason, "tool_calls");
  if (c.finish_reason === "tool_calls") assertToolCalls(c.message.tool_calls);
  else assert.equal(typeof c.message.content, "string");

  // The conversation continues with the tool's answer.
  if (c.finish_reason === "tool_calls") {
    const call = c.message.tool_calls[0];
    const r2 = await client.chat.completions.create({
      model, max_tokens: 16, temperature: 0, tools,
      messages: [...user("What is the weather in Paris?"), c.message, { role: "tool", tool_call_id: call.id, content: "sunny, 21C" }],
    });
    assert.equal(r2.choices[0].message.role, "assistant");
  }
});

await check("chat tools streamed", async () => {
  const stream = await client.chat.completions.create({
    model, messages: user("What is the weather in Paris?"), max_tokens: 128, temperature: 0, tools, stream: true,
  });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    if (!chunk.choices.length) continue;
    const ch = chunk.choices[0];
    for (const d of ch.delta.tool_calls || []) {
      const slot = (calls[d.index] ||= { id: "", type: "function", function: { name: "", arguments: "" } });
      if (d.id) slot.id = d.id;
      if (d.function?.name) slot.function.name += d.function.name;
      if (d.function?.arguments) slot.function.arguments += d.function.arguments;
    }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  if (fake) assert.equal(finish, "tool_calls");
  if (finish === "tool_calls") assertToolCalls(calls);
});

await check("chat logprobs", async () => {
  const r = await client.chat.completions.create({
    model, messages: user("Count."), max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 2,
  });
  const c = r.choices[0];
  assert.equal(c.logprobs.content.length, r.usage.completion_tokens);
  for (const e of c.logprobs.content) {
    assert.equal(typeof e.token, "string");
    assert.ok(e.logprob <= 0);
    assert.ok(Array.isArray(e.bytes));
    assert.equal(e.top_logprobs.length, 2);
  }
});

await check("completions", async () => {
  const r = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 8, temperature: 0 });
  assert.equal(r.object, "text_completion");
  assert.equal(typeof r.choices[0].text, "string");
  assert.ok(["stop", "length"].includes(r.choices[0].finish_reason));
  assertUsage(r.usage, 8);
});

await check("concurrent requests all complete", async () => {
  const jobs = [];
  for (let i = 0; i < 6; i++) {
    const stream = i % 2 === 1;
    jobs.push((async () => {
      const r = await client.chat.completions.create({ model, messages: user(`Request ${i}`), max_tokens: 12, stream });
      if (!stream) return r.choices[0].finish_reason;
      let finish = null;
      for await (const chunk of r) if (chunk.choices.length && chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
      return finish;
    })());
  }
  const finishes = await Promise.all(jobs);
  for (const f of finishes) assert.ok(["stop", "length"].includes(f), String(f));
});

async function expectApiError(promise, status, param) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof OpenAI.APIError, `expected APIError, got ${err}`);
    assert.equal(err.status, status);
    assert.equal(typeof err.error?.message, "string");
    assert.equal(typeof err.type, "string");
    if (param !== undefined) assert.equal(err.param, param);
    return err;
  }
  assert.fail(`expected HTTP ${status}`);
}

await check("bad requests: status and error shape", async () => {
  await expectApiError(client.chat.completions.create({ model, messages: user("x"), temperature: "hot" }), 400, "temperature");
  await expectApiError(client.chat.completions.create({ model, messages: user("x"), n: 17 }), 400, "n");
  await expectApiError(client.chat.completions.create({ model, messages: [] }), 400, "messages");
  await expectApiError(client.chat.completions.create({ model, messages: user("x"), max_tokens: 0 }), 400, "max_tokens");
  await expectApiError(client.get("/no/such/route"), 404);
});

finish("checks", `mode ${mode}, ${baseURL}`);
