// The official `openai` npm client sends images to a running `ringlm serve` (demo-size model
// with its tiny vision tower) as chat content parts:
//
//   RINGLM_BASE_URL=http://127.0.0.1:PORT/v1 RINGLM_MEDIA_DIR=DIR (the --allow-local-media
//   folder: a.png a.jpg a.webp, sub/a.png, link.png -> a file outside) RINGLM_OUTSIDE=FILE
//   RINGLM_MAX_MEDIA_BYTES=N node openai_image_test.mjs
//
// Asserts what holds for any weights: images become soft tokens in the prompt (more prompt
// tokens by default than with detail "low"), streamed and non-streamed replies agree, a local file
// gives the same greedy reply as the same bytes in a data: URL, and every refusal is a 400
// whose param names the part.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import OpenAI from "openai";

import { check, finish } from "./checks.mjs";

const baseURL = process.env.RINGLM_BASE_URL;
const dir = process.env.RINGLM_MEDIA_DIR;
const outside = process.env.RINGLM_OUTSIDE;
const maxBytes = Number(process.env.RINGLM_MAX_MEDIA_BYTES);
const client = new OpenAI({ baseURL, apiKey: "not-needed", maxRetries: 0, timeout: 120_000 });


const dataUrl = (file, type) => `data:${type};base64,${fs.readFileSync(path.join(dir, file)).toString("base64")}`;
const ask = (imageUrl, text = "What is in this picture?") => [
  { role: "user", content: [{ type: "image_url", image_url: imageUrl }, { type: "text", text }] },
];
const greedy = { model: "m", max_tokens: 6, temperature: 0, seed: 1 };

async function expect400(messages, param, code) {
  try {
    await client.chat.completions.create({ ...greedy, messages });
  } catch (err) {
    assert.ok(err instanceof OpenAI.APIError, `expected APIError, got ${err}`);
    assert.equal(err.status, 400, err.message);
    assert.equal(err.param, param, err.message);
    if (code) assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail("expected HTTP 400");
}

const textOnly = await client.chat.completions.create({
  ...greedy,
  messages: [{ role: "user", content: "What is in this picture?" }],
});
const png = dataUrl("a.png", "image/png");
let pngReply = null;

await check("PNG, JPEG and WebP data URLs become soft tokens", async () => {
  for (const [file, type] of [["a.png", "image/png"], ["a.jpg", "image/jpeg"], ["a.webp", "image/webp"]]) {
    const r = await client.chat.completions.create({ ...greedy, messages: ask({ url: dataUrl(file, type), detail: "low" }) });
    assert.equal(r.choices[0].message.role, "assistant");
    assert.equal(typeof r.choices[0].message.content, "string");
    // Up to 70 soft tokens (detail low; fewer when the aspect ratio leaves part of the patch
    // budget unused) plus the image's begin/end markers, on top of the text.
    const added = r.usage.prompt_tokens - textOnly.usage.prompt_tokens;
    assert.ok(added > 40 && added <= 72, `${file}: ${added} prompt tokens for the image`);
  }
  const low = await client.chat.completions.create({ ...greedy, messages: ask({ url: png, detail: "low" }) });
  // No detail: the model's default budget (280), more than low's 70. ("high", 1120, is left
  // out to keep the test short; the parser test checks the mapping.)
  const auto = await client.chat.completions.create({ ...greedy, max_tokens: 1, messages: ask({ url: png }) });
  assert.ok(auto.usage.prompt_tokens > low.usage.prompt_tokens + 100, `auto ${auto.usage.prompt_tokens}, low ${low.usage.prompt_tokens}`);
  pngReply = low.choices[0].message.content;
});

await check("streamed image reply equals the non-streamed one", async () => {
  const stream = await client.chat.completions.create({ ...greedy, stream: true, messages: ask({ url: png, detail: "low" }) });
  let text = "";
  let finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, pngReply);
  assert.ok(["stop", "length"].includes(finish), finish);
});

await check("a local file under --allow-local-media answers as its data URL does", async () => {
  const rel = await client.chat.completions.create({ ...greedy, messages: ask({ url: "a.png", detail: "low" }) });
  assert.equal(rel.choices[0].message.content, pngReply);
  const abs = await client.chat.completions.create({
    ...greedy,
    messages: ask({ url: "file://" + path.join(dir, "a.png"), detail: "low" }),
  });
  assert.equal(abs.choices[0].message.content, pngReply);
  const shorthand = await client.chat.completions.create({ ...greedy, max_tokens: 1, messages: ask({ url: "sub/a.png", detail: "low" }) });
  assert.ok(shorthand.usage.prompt_tokens > textOnly.usage.prompt_tokens);
});

await check("refusals are 400s naming the part", async () => {
  const url = "messages[0].content[0].image_url.url";
  let e = await expect400(ask({ url: "https://example.com/cat.png" }), url, "invalid_value");
  assert.match(e.message, /never fetches/);
  await expect400(ask({ url: "../" + path.basename(outside) }), url, "local_media_refused");
  await expect400(ask({ url: outside }), url, "local_media_refused");
  await expect400(ask({ url: "link.png" }), url, "local_media_refused");
  await expect400(ask({ url: "missing.png" }), url);
  await expect400(ask({ url: "data:image/gif;base64,R0lGODlh" }), url);
  e = await expect400(ask({ url: "data:image/png;base64," + Buffer.from("\x89PNG\r\n\x1a\nnot really").toString("base64") }), url);
  assert.match(e.message, /PNG/);
  const big = Buffer.alloc(maxBytes + 1, 7).toString("base64");
  e = await expect400(ask({ url: "data:image/png;base64," + big }), url, "media_too_large");
  assert.match(e.message, new RegExp(`limit is ${maxBytes}`));
  await expect400(ask({ url: png, detail: "ultra" }), "messages[0].content[0].image_url.detail");
  await expect400([{ role: "user", content: [{ type: "video_url", video_url: { url: png } }] }], "messages[0].content[0].type");
});

finish("image checks", `${baseURL}`);
