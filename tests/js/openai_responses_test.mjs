// The OpenAI Responses API and the chat features tools rely on, driven with the official
// `openai` npm client against a running `ringlm serve` (issue #30):
//
//   RINGLM_BASE_URL=http://127.0.0.1:PORT/v1 RINGLM_TEST_MODE=fake|real node openai_responses_test.mjs
//
// responses.create (plain, json_schema text format, streamed), a Codex-style agent loop
// (function tool, call, function_call_output, answer; store: false, streamed), chat with
// n > 1, max_tokens above the limit (clamped, with the header), parallel_tool_calls false and
// reasoning_effort. Shapes and invariants hold for any model; `fake` mode also insists on
// what the fake backend always does.
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
const model = (await client.models.list()).data[0].id;

const personSchema = {
  type: "object",
  properties: { name: { type: "string" }, age: { type: "integer" } },
  required: ["name", "age"],
  additionalProperties: false,
};

await check("responses.create plain", async () => {
  const r = await client.responses.create({ model, input: "Say hello.", instructions: "Be brief.", max_output_tokens: 16 });
  assert.equal(r.object, "response");
  assert.match(r.id, /^resp_/);
  assert.ok(["completed", "incomplete"].includes(r.status), r.status);
  assert.equal(typeof r.output_text, "string");  // the SDK's join of the output_text parts
  assert.equal(r.output.at(-1).type, "message");
  assert.ok(r.usage.output_tokens <= 16);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
});

await check("responses.create json_schema gives parseable JSON", async () => {
  const r = await client.responses.create({
    model, input: [{ role: "user", content: "Extract: Ada Lovelace was 36." }], max_output_tokens: 200,
    text: { format: { type: "json_schema", name: "person", schema: personSchema, strict: true } },
  });
  if (fake) assert.equal(r.status, "completed");
  if (r.status === "completed") {
    const value = JSON.parse(r.output_text);
    assert.equal(typeof value.name, "string");
    assert.ok(Number.isInteger(value.age));
  } else {
    assert.equal(r.incomplete_details.reason, "max_output_tokens");
  }
});

await check("responses streamed: event names, deltas equal the final text", async () => {
  const stream = await client.responses.create({ model, input: "Say hello.", max_output_tokens: 16, stream: true });
  const seen = [];
  let text = "";
  let final = null;
  for await (const ev of stream) {
    seen.push(ev.type);
    if (ev.type === "response.output_text.delta") text += ev.delta;
    if (ev.type === "response.completed" || ev.type === "response.incomplete") final = ev.response;
  }
  assert.equal(seen[0], "response.created");
  assert.equal(seen[1], "response.in_progress");
  assert.ok(seen.includes("response.output_item.added"));
  assert.ok(seen.includes("response.output_text.done"));
  assert.ok(final, "a final response event");
  const message = final.output.find((o) => o.type === "message");
  assert.equal(message.content[0].text, text);
});

const weatherTool = {
  type: "function",
  name: "get_weather",
  description: "Current weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
  strict: true,
};

// An agent's loop as Codex runs it: stateless (store: false), streamed, the whole history
// sent back each turn with the model's function_call items and their outputs.
await check("Codex-style loop: function call, output, answer", async () => {
  const input = [{ type: "message", role: "user", content: [{ type: "input_text", text: "What is the weather in Paris?" }] }];
  const turn = async () => {
    const stream = await client.responses.create({
      model, input, tools: [weatherTool], tool_choice: "auto", parallel_tool_calls: false, store: false,
      stream: true, max_output_tokens: 128,
    });
    let final = null;
    for await (const ev of stream) if (ev.type === "response.completed" || ev.type === "response.incomplete") final = ev.response;
    assert.ok(final);
    return final;
  };
  const first = await turn();
  const calls = first.output.filter((o) => o.type === "function_call");
  if (fake) assert.equal(calls.length, 1);
  if (!calls.length) return;  // a real model may answer directly
  assert.ok(calls.length <= 1, "parallel_tool_calls: false");
  const call = calls[0];
  assert.equal(call.name, "get_weather");
  assert.equal(typeof JSON.parse(call.arguments), "object");
  input.push(...first.output, { type: "function_call_output", call_id: call.call_id, output: "sunny, 21C" });
  const second = await turn();
  assert.ok(second.output.length >= 1);
});

await check("responses refuses previous_response_id by name", async () => {
  try {
    await client.responses.create({ model, input: "x", previous_response_id: "resp_123" });
    assert.fail("expected 400");
  } catch (err) {
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.param, "previous_response_id");
  }
});

await check("chat n > 1", async () => {
  const r = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }], n: 3, max_tokens: 8, seed: 3 });
  assert.equal(r.choices.length, 3);
  r.choices.forEach((c, i) => assert.equal(c.index, i));
});

await check("chat max_tokens above the limit is clamped and said", async () => {
  const { data, response } = await client.chat.completions
    .create({ model, messages: [{ role: "user", content: "Hi" }], max_tokens: 10_000_000 })
    .withResponse();
  assert.match(response.headers.get("x-ringlm-max-tokens-clamped"), /^requested=10000000 used=\d+ limit=(server|context)$/);
  assert.ok(["stop", "length"].includes(data.choices[0].finish_reason));
});

await check("chat reasoning_effort refused by name when unknown", async () => {
  try {
    await client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }], reasoning_effort: "extreme" });
    assert.fail("expected 400");
  } catch (err) {
    assert.equal(err.status, 400);
    assert.equal(err.param, "reasoning_effort");
  }
});

finish("responses checks", `mode ${mode}, ${baseURL}`);
