// The official `openai` npm client sends audio to a running `ringlm serve` (demo-size model
// with its tiny random audio and vision towers) as `input_audio` content parts:
//
//   RINGLM_BASE_URL=http://127.0.0.1:PORT/v1 RINGLM_MEDIA_DIR=DIR RINGLM_MAX_MEDIA_BYTES=N \
//     node openai_audio_test.mjs
//
// DIR holds (made by tests/server/serve_image_test.sh with espeak-ng and sox): speech.wav
// (16 kHz mono 16-bit), speech.flac (the same samples), long.wav (31 s), half.wav (20 s),
// a.png. Asserts what holds for any weights: a clip becomes exactly the processor's number of
// soft tokens plus its two markers (computed here from the WAV header, by the rule of
// transformers' Gemma4Processor), an image and a clip in one message add up, the same samples
// in FLAC give the same greedy reply, streamed equals non-streamed, and every refusal is a 400
// whose param names the part.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import OpenAI from "openai";

import { check, finish } from "./checks.mjs";

const baseURL = process.env.RINGLM_BASE_URL;
const dir = process.env.RINGLM_MEDIA_DIR;
const maxBytes = Number(process.env.RINGLM_MAX_MEDIA_BYTES);
const client = new OpenAI({ baseURL, apiKey: "not-needed", maxRetries: 0, timeout: 120_000 });


const b64 = (file) => fs.readFileSync(path.join(dir, file)).toString("base64");
const audioPart = (data, format) => ({ type: "input_audio", input_audio: { data, format } });
const ask = (parts, text = "What is said here?") => [{ role: "user", content: [...parts, { type: "text", text }] }];
const greedy = { model: "m", max_tokens: 6, temperature: 0, seed: 1 };

// Samples in a canonical 16-bit PCM WAV: the "data" chunk's size / (2 * channels).
function wavSamples(file) {
  const b = fs.readFileSync(path.join(dir, file));
  let at = 12;
  let channels = 1;
  while (at + 8 <= b.length) {
    const id = b.toString("latin1", at, at + 4);
    const size = b.readUInt32LE(at + 4);
    if (id === "fmt ") channels = b.readUInt16LE(at + 10);
    if (id === "data") return size / 2 / channels;
    at += 8 + size + (size & 1);
  }
  throw new Error(`${file}: no data chunk`);
}
// Gemma4Processor's soft-token count for n samples at 16 kHz: frames of 320 samples every 160
// after 160 samples of leading padding, then two stride-2 convolutions.
function audioTokens(n) {
  const frames = Math.floor((n + 160 - 321) / 160) + 1;
  return Math.ceil(Math.ceil(frames / 2) / 2);
}

async function expect400(messages, param, code) {
  try {
    await client.chat.completions.create({ ...greedy, max_tokens: 1, messages });
  } catch (err) {
    assert.ok(err instanceof OpenAI.APIError, `expected APIError, got ${err}`);
    assert.equal(err.status, 400, err.message);
    assert.equal(err.param, param, err.message);
    if (code) assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail("expected HTTP 400");
}

const textOnly = await client.chat.completions.create({ ...greedy, messages: [{ role: "user", content: "What is said here?" }] });
const wav = b64("speech.wav");
const n = audioTokens(wavSamples("speech.wav"));
let wavReply = null;

await check("a WAV clip becomes the processor's soft-token count", async () => {
  const r = await client.chat.completions.create({ ...greedy, messages: ask([audioPart(wav, "wav")]) });
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal(typeof r.choices[0].message.content, "string");
  assert.ok(n > 10, `${n} soft tokens`);
  assert.equal(r.usage.prompt_tokens - textOnly.usage.prompt_tokens, n + 2, "soft tokens + <|audio> + <audio|>");
  wavReply = r.choices[0].message.content;
});

await check("the same samples in FLAC answer as the WAV does", async () => {
  const r = await client.chat.completions.create({ ...greedy, messages: ask([audioPart(b64("speech.flac"), "flac")]) });
  assert.equal(r.usage.prompt_tokens - textOnly.usage.prompt_tokens, n + 2);
  assert.equal(r.choices[0].message.content, wavReply);
});

await check("streamed audio reply equals the non-streamed one", async () => {
  const stream = await client.chat.completions.create({ ...greedy, stream: true, messages: ask([audioPart(wav, "wav")]) });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  assert.equal(text, wavReply);
});

await check("an image and a clip in one message add up", async () => {
  const image = { type: "image_url", image_url: { url: `data:image/png;base64,${b64("a.png")}`, detail: "low" } };
  const imageOnly = await client.chat.completions.create({ ...greedy, max_tokens: 1, messages: ask([image]) });
  const both = await client.chat.completions.create({ ...greedy, max_tokens: 1, messages: ask([image, audioPart(wav, "wav")]) });
  assert.equal(both.usage.prompt_tokens - imageOnly.usage.prompt_tokens, n + 2);
  const two = await client.chat.completions.create({
    ...greedy,
    max_tokens: 1,
    messages: ask([audioPart(wav, "wav"), audioPart(b64("speech.flac"), "flac")]),
  });
  assert.equal(two.usage.prompt_tokens - textOnly.usage.prompt_tokens, 2 * (n + 2));
});

await check("refusals are 400s naming the part", async () => {
  const data = "messages[0].content[0].input_audio.data";
  let e = await expect400(ask([audioPart("UklG$Rg==", "wav")]), data);
  assert.match(e.message, /invalid base64 at offset 4/);
  e = await expect400(ask([audioPart(wav, "aac")]), "messages[0].content[0].input_audio.format");
  assert.match(e.message, /'aac' is not supported/);
  e = await expect400(ask([audioPart(wav, "mp3")]), data);
  assert.match(e.message, /format 'mp3' but the data is wav/);
  e = await expect400(ask([audioPart(b64("long.wav"), "wav")]), data);
  assert.match(e.message, /30 s/);
  e = await expect400(ask([audioPart(b64("half.wav"), "wav"), audioPart(b64("half.wav"), "wav")]),
                      "messages[0].content[1].input_audio.data");
  assert.match(e.message, /add up to 40 s/);
  e = await expect400(ask([audioPart(Buffer.from("RIFF\x10\x00\x00\x00WAVEjunk").toString("base64"), "wav")]), data);
  assert.match(e.message, /input_audio\.data/);
  const big = Buffer.alloc(maxBytes + 1, 7).toString("base64");
  e = await expect400(ask([audioPart(big, "wav")]), data, "media_too_large");
  assert.match(e.message, new RegExp(`limit is ${maxBytes}`));
  await expect400(ask([{ type: "input_audio", input_audio: { data: wav } }]), "messages[0].content[0].input_audio.format");
});

finish("audio checks", `${baseURL}`);
