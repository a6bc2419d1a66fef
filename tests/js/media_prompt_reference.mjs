// Reference side of the media prompt test (tests/chat/media_prompt_ids_test.py): the ids
// transformers' Gemma4Processor gives a conversation with images and audio clips, computed
// without ringlm. The conversation is rendered with the model's chat template by
// @huggingface/jinja; each "<|image|>" the template wrote becomes "<|image>" + n x "<|image|>"
// + "<image|>" and each "<|audio|>" becomes "<|audio>" + n x "<|audio|>" + "<audio|>" (the
// processor's text replacement), and the whole text is tokenized by @huggingface/tokenizers.
// n comes from the processor's rules, applied here to the files' headers:
// - image: get_aspect_ratio_preserving_size for the soft-token budget (pooling kernel 3,
//   patch 16), n = (height / 48) * (width / 48);
// - audio: the clip resampled to 16 kHz has ceil(samples * 16000 / rate) samples; frames of
//   320 every 160 after 160 samples of padding; two stride-2 convolutions.
//
//   node media_prompt_reference.mjs --model DIR --cases IN.jsonl --out OUT.jsonl
// A case: {"request": {"messages": [...]}, "add_generation_prompt": true,
//          "images": ["a.png", ...], "audios": ["a.wav", ...], "image_tokens": 0 (default)}
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const dir = args.model;
const tokJson = JSON.parse(readFileSync(`${dir}/tokenizer.json`, "utf8"));
const tokConfig = JSON.parse(readFileSync(`${dir}/tokenizer_config.json`, "utf8"));
const tokenizer = new Tokenizer(tokJson, tokConfig);
const template = new Template(readFileSync(`${dir}/chat_template.jinja`, "utf8"));
const processor = JSON.parse(readFileSync(`${dir}/processor_config.json`, "utf8"));
const imageProcessor = processor.image_processor ?? processor;
const featureExtractor = processor.feature_extractor ?? processor;
const patch = imageProcessor.patch_size ?? 16;
const pool = imageProcessor.pooling_kernel_size ?? 3;
const defaultBudget = imageProcessor.max_soft_tokens ?? 280;
const rate16k = featureExtractor.sampling_rate ?? 16000;

// PNG: width and height are the IHDR chunk's first two big-endian words.
function pngSize(file) {
  const b = readFileSync(file);
  if (b.toString("latin1", 1, 4) !== "PNG" || b.toString("latin1", 12, 16) !== "IHDR") throw new Error(`${file}: not a PNG`);
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

// get_aspect_ratio_preserving_size: the largest multiple-of-48 size within the patch budget.
function imageTokens(file, budget) {
  const { width, height } = pngSize(file);
  const maxPatches = budget * pool * pool;
  const factor = Math.sqrt((maxPatches * patch * patch) / (height * width));
  const side = pool * patch;
  let th = Math.floor((factor * height) / side) * side;
  let tw = Math.floor((factor * width) / side) * side;
  const maxSide = Math.floor(maxPatches / (pool * pool)) * side;
  if (th === 0) {
    th = side;
    tw = Math.min(Math.floor(width / height) * side, maxSide);
  } else if (tw === 0) {
    tw = side;
    th = Math.min(Math.floor(height / width) * side, maxSide);
  }
  return (th / side) * (tw / side);
}

// A PCM WAV's frames (samples per channel) and rate, from its fmt and data chunks.
function wavInfo(file) {
  const b = readFileSync(file);
  if (b.toString("latin1", 0, 4) !== "RIFF" || b.toString("latin1", 8, 12) !== "WAVE") throw new Error(`${file}: not a WAV`);
  let at = 12;
  let channels = 0, rate = 0, bits = 0;
  while (at + 8 <= b.length) {
    const id = b.toString("latin1", at, at + 4);
    const size = b.readUInt32LE(at + 4);
    if (id === "fmt ") {
      channels = b.readUInt16LE(at + 10);
      rate = b.readUInt32LE(at + 12);
      bits = b.readUInt16LE(at + 22);
    }
    if (id === "data") return { frames: size / (channels * (bits / 8)), rate };
    at += 8 + size + (size & 1);
  }
  throw new Error(`${file}: no data chunk`);
}

function audioTokens(file) {
  const { frames, rate } = wavInfo(file);
  const n = rate === rate16k ? frames : Math.ceil((frames * rate16k) / rate);
  const melFrames = Math.floor((n + 160 - 321) / 160) + 1;
  return Math.ceil(Math.ceil(melFrames / 2) / 2);
}

const out = [];
for (const line of readFileSync(args.cases, "utf8").split("\n")) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  const base = path.dirname(args.cases);
  const rendered = template.render({
    ...c.request,
    add_generation_prompt: c.add_generation_prompt ?? false,
    bos_token: "<bos>",
    eos_token: "<eos>",
  });
  const images = (c.images ?? []).map((f) => imageTokens(path.resolve(base, f), c.image_tokens || defaultBudget));
  const audios = (c.audios ?? []).map((f) => audioTokens(path.resolve(base, f)));
  let nextImage = 0, nextAudio = 0;
  const expanded = rendered.replace(/<\|image\|>|<\|audio\|>/g, (ph) => {
    if (ph === "<|image|>") {
      if (nextImage >= images.length) throw new Error("more image placeholders than images");
      return "<|image>" + "<|image|>".repeat(images[nextImage++]) + "<image|>";
    }
    if (nextAudio >= audios.length) throw new Error("more audio placeholders than clips");
    return "<|audio>" + "<|audio|>".repeat(audios[nextAudio++]) + "<audio|>";
  });
  if (nextImage !== images.length || nextAudio !== audios.length) throw new Error("fewer placeholders than media");
  // The template writes <bos> itself: no special tokens are added.
  const ids = tokenizer.encode(expanded, { add_special_tokens: false }).ids;
  out.push(JSON.stringify({ text: rendered, ids, image_tokens: images, audio_tokens: audios }));
}
writeFileSync(args.out, out.join("\n") + "\n");
