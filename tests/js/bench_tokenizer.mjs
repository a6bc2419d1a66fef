// Speed of the reference tokenizer (@huggingface/tokenizers) on the text that
// tools/bench_tokenizer writes with --write-text, for docs/bench/tokenizer.md.
//
//   node bench_tokenizer.mjs --tokenizer DIR --text FILE [--runs N]
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { Tokenizer } from "@huggingface/tokenizers";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const runs = Number(args.runs ?? 2);
const bytes = readFileSync(args.text);
const text = bytes.toString("utf8");

const t0 = performance.now();
const c0 = process.cpuUsage();
const tokenizer = new Tokenizer(
  JSON.parse(readFileSync(`${args.tokenizer}/tokenizer.json`, "utf8")),
  JSON.parse(readFileSync(`${args.tokenizer}/tokenizer_config.json`, "utf8")),
);
const loadWall = performance.now() - t0;
const loadCpu = (process.cpuUsage(c0).user + process.cpuUsage(c0).system) / 1000;

let ids = [];
let bestWall = Infinity, bestCpu = Infinity;
for (let r = 0; r < runs; ++r) {
  const w0 = performance.now();
  const u0 = process.cpuUsage();
  ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
  const u = process.cpuUsage(u0);
  bestWall = Math.min(bestWall, performance.now() - w0);
  bestCpu = Math.min(bestCpu, (u.user + u.system) / 1000);
}
const mb = bytes.length / 1e6;
console.log(`text: ${bytes.length} bytes, ${ids.length} tokens`);
console.log(`load: ${loadWall.toFixed(0)} ms wall, ${loadCpu.toFixed(0)} ms cpu`);
console.log(`encode (best of ${runs}): ${bestWall.toFixed(0)} ms wall = ${(mb / (bestWall / 1000)).toFixed(3)} MB/s; ` +
  `${bestCpu.toFixed(0)} ms cpu = ${(mb / (bestCpu / 1000)).toFixed(3)} MB/s`);
if (args["ids-out"]) {
  (await import("node:fs")).writeFileSync(args["ids-out"], JSON.stringify(ids));
}
