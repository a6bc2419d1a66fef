// Loads the tiny checkpoint's tokenizer with the reference @huggingface/tokenizers and checks
// that it is a working Gemma-shaped tokenizer. argv: CHECKPOINT_DIR NODE_MODULES_DIR
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dir, modules] = process.argv.slice(2);
const { Tokenizer } = await import(pathToFileURL(join(modules, "@huggingface/tokenizers/dist/tokenizers.mjs")).href);
const json = JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8"));
const cfg = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8"));
const gen = JSON.parse(readFileSync(join(dir, "generation_config.json"), "utf8"));
const tok = new Tokenizer(json, cfg);
let failures = 0;
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures++;
};

const vocab = (config.text_config ?? config).vocab_size;
check(Object.keys(json.model.vocab).length === vocab, `vocab has ${vocab} tokens`);
const texts = [
  "Hello world! How are you today?",
  "{\"name\": \"Alice\", \"age\": 42}",
  "naïve café — 東京 🙂",
  "  leading spaces\nand\n\nnewlines\t tabs",
];
for (const text of texts) {
  const enc = tok.encode(text, { add_special_tokens: false });
  check(enc.ids.every((id) => id >= 0 && id < vocab), `ids in range for ${JSON.stringify(text)}`);
  check(tok.decode(enc.ids) === text, `round trip ${JSON.stringify(text)} (${enc.ids.length} tokens)`);
}
check(tok.encode("the answer", { add_special_tokens: false }).ids.length < "the answer".length, "merges shorten text");
check(JSON.stringify(tok.encode("é", { add_special_tokens: false }).tokens) === JSON.stringify(["<0xC3>", "<0xA9>"]),
      "byte fallback for é");
const turn = tok.encode("<|turn>user\nHi<turn|>", { add_special_tokens: false }).ids;
check(turn[0] === 105 && turn[turn.length - 1] === 106, `control tokens <|turn>=105 <turn|>=106 (${turn})`);
check(tok.encode("Hi").ids[0] === 2, "<bos> prepended by the post-processor");
for (const [id, text] of [[0, "<pad>"], [1, "<eos>"], [2, "<bos>"], [3, "<unk>"], [50, "<|tool_response>"]])
  check(tok.decode([id], { skip_special_tokens: false }) === text, `id ${id} is ${text}`);
check(JSON.stringify(gen.eos_token_id) === "[1,106,50]" && cfg.eos_token === "<turn|>", "stop ids agree with the tokenizer");
process.exit(failures ? 1 : 0);
