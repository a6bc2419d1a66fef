// Reference side of the "user text is text" test: for each conversation, the ids the prompt
// must have when the template's markup is markup and everything the request wrote is plain
// text. Independent of ringlm's marker scheme: every control token in a request string is
// swapped for a private-use placeholder, the conversation is rendered with @huggingface/jinja,
// the rendered text is cut at the control tokens (all of them the template's), and each piece,
// placeholders turned back into the original token text, is encoded by @huggingface/tokenizers
// with the special added tokens removed (so that they are plain text, like Rust tokenizers'
// encode_special_tokens).
//
//   node user_text_reference.mjs --tokenizer DIR --cases IN.jsonl --out OUT.jsonl
import { readFileSync, writeFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const dir = args.tokenizer;
const tokJson = JSON.parse(readFileSync(`${dir}/tokenizer.json`, "utf8"));
const config = JSON.parse(readFileSync(`${dir}/tokenizer_config.json`, "utf8"));
const full = new Tokenizer(tokJson, config);
const specials = tokJson.added_tokens.filter((t) => t.special).map((t) => t.content);
const plainJson = { ...tokJson, added_tokens: tokJson.added_tokens.filter((t) => !t.special) };
const plain = new Tokenizer(plainJson, config);
const template = new Template(readFileSync(`${dir}/chat_template.jinja`, "utf8"));

// Leftmost-longest control token at or after `from`.
function nextSpecial(text, from) {
  let best = null;
  for (const s of specials) {
    const i = text.indexOf(s, from);
    if (i < 0) continue;
    if (!best || i < best.at || (i === best.at && s.length > best.token.length)) best = { at: i, token: s };
  }
  return best;
}

const swapped = [];
function swap(value) {
  if (typeof value === "string") {
    let out = "";
    let pos = 0;
    for (let m = nextSpecial(value, 0); m; m = nextSpecial(value, pos)) {
      // The token's first character stays, so that sorting (dictsort, tojson of sorted keys)
      // orders the string where the original would be.
      out += value.slice(pos, m.at) + m.token[0] + "\uE000" + String.fromCharCode(0xe100 + swapped.length) + "\uE001";
      swapped.push(m.token);
      pos = m.at + m.token.length;
    }
    return out + value.slice(pos);
  }
  if (Array.isArray(value)) return value.map(swap);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [swap(k), swap(v)]));
  return value;
}
const unswap = (s) => s.replace(/.\uE000(.)\uE001/gu, (_, c) => swapped[c.charCodeAt(0) - 0xe100]);

const out = [];
for (const line of readFileSync(args.cases, "utf8").split("\n")) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  swapped.length = 0;
  const ctx = { messages: swap(c.messages), add_generation_prompt: true, bos_token: "<bos>", eos_token: "<eos>" };
  if (c.tools) ctx.tools = swap(c.tools);
  const text = template.render(ctx);
  const ids = [];
  let pos = 0;
  for (let m = nextSpecial(text, 0); m; m = nextSpecial(text, pos)) {
    if (m.at > pos) ids.push(...plain.encode(unswap(text.slice(pos, m.at)), { add_special_tokens: false }).ids);
    ids.push(full.token_to_id(m.token));
    pos = m.at + m.token.length;
  }
  if (pos < text.length) ids.push(...plain.encode(unswap(text.slice(pos)), { add_special_tokens: false }).ids);
  out.push(JSON.stringify({ text: unswap(text), ids }));
}
writeFileSync(args.out, out.join("\n") + "\n");
