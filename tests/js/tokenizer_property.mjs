// Reference side of the tokenizer property test: generates random strings (deterministic
// for a seed) and encodes them with @huggingface/tokenizers, the reference implementation.
// Writes one JSON object per line: {"text", "ids", "js_decoded"}.
//
//   node tokenizer_property.mjs --tokenizer DIR --count N --seed S --out FILE
import { readFileSync, writeFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const dir = args.tokenizer;
const count = Number(args.count ?? 3000);
let seed = BigInt(args.seed ?? 1) * 2n + 1n;

// xorshift64*: deterministic across Node versions.
function next() {
  seed ^= seed >> 12n;
  seed ^= (seed << 25n) & 0xffffffffffffffffn;
  seed ^= seed >> 27n;
  return Number(((seed * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn) >> 33n);
}
const below = (n) => next() % n;
const pick = (arr) => arr[below(arr.length)];
const fromRange = (lo, hi) => String.fromCodePoint(lo + below(hi - lo + 1));

const words = ["the", "Hello", "world", "token", "izer", "model", "naïve", "café", "über", "don't", "C++",
  "std::vector", "x_i", "1234", "3.14159", "snake_case", "camelCase", "URL", "https://a.b/c?d=e"];
const lookalikes = ["<|turn>", "<turn|>", "<bos>", "<eos>", "<pad>", "<|tool_call>", "<tool_call|>", "<|\"|>",
  "<|channel>", "<channel|>", "<|think|>", "<|image|>", "<mask>", "<unused7>", "<unused99>", "[multimodal]",
  "<table>", "</td>", "<h1>", "<|", "|>", "<|tur", "turn|>", "<0x41>", "<0xZZ>", "<unk>", "▁", "▁▁", "▁x", "<<bos>>",
  "<|turn><|turn>", "<b>bold</b>"];
const emoji = ["😀", "👋🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "🦜", "❤️", "✨", "🤖", "🧑🏿‍💻", "👍🏻"];
const ranges = [
  [0x00c0, 0x024f], [0x0370, 0x03ff], [0x0400, 0x04ff], [0x0590, 0x05ff], [0x0600, 0x06ff], [0x0900, 0x097f],
  [0x0e00, 0x0e7f], [0x3040, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0x2000, 0x206f], [0x2190, 0x22ff],
  [0x0300, 0x036f], [0x1f300, 0x1faff], [0x13000, 0x1342f], [0x1d400, 0x1d7ff], [0x20000, 0x2a6df], [0xe000, 0xf8ff],
];

function randomCodePoint() {
  // Any scalar value except surrogates (JS strings could hold lone ones; UTF-8 cannot).
  for (;;) {
    const cp = below(4) === 0 ? below(0x110000) : below(0x3000);
    if (cp < 0xd800 || cp > 0xdfff) return String.fromCodePoint(cp);
  }
}

function piece() {
  switch (below(12)) {
    case 0: case 1: return pick(words) + (below(2) ? " " : "");
    case 2: return " ".repeat(1 + below(below(4) === 0 ? 70 : 5));
    case 3: return pick(["\n", "\t", "\r\n", "\r", "\n\n", " \n", "\t\t", "\n \n"]).repeat(1 + below(below(5) === 0 ? 40 : 3));
    case 4: return pick(lookalikes);
    case 5: return pick(emoji);
    case 6: { const [lo, hi] = pick(ranges); let s = ""; for (let k = 1 + below(8); k > 0; --k) s += fromRange(lo, hi); return s; }
    case 7: return String.fromCodePoint(below(0x20)) + (below(2) ? String.fromCodePoint(0x7f + below(0x21)) : "");
    case 8: return randomCodePoint();
    case 9: return String(below(1000000)) + pick([".", ",", "", "e-5", "%"]);
    case 10: return pick(["(", ")", "{", "}", "[", "]", "<", ">", "|", "\"", "'", "`", ";", ":", "=", "->", "=>", "//", "/*", "#"]);
    default: return pick(["\u200b", "\u200d", "\ufeff", "\u00a0", "\u3000", "\u2028", "\u0301", "e\u0301", "ﬁ", "Ⅻ"]);
  }
}

function randomText() {
  let s = "";
  for (let k = below(below(6) === 0 ? 60 : 12) + 1; k > 0; --k) s += piece();
  return s;
}

const tokenizer = new Tokenizer(
  JSON.parse(readFileSync(`${dir}/tokenizer.json`, "utf8")),
  JSON.parse(readFileSync(`${dir}/tokenizer_config.json`, "utf8")),
);
const lines = [];
for (let i = 0; i < count; ++i) {
  const text = randomText();
  const { ids } = tokenizer.encode(text, { add_special_tokens: false });
  const js_decoded = ids.length ? tokenizer.decode(ids, { clean_up_tokenization_spaces: false }) : "";
  lines.push(JSON.stringify({ text, ids, js_decoded }));
}
writeFileSync(args.out, lines.join("\n") + "\n");
console.log(`wrote ${count} cases to ${args.out}`);
