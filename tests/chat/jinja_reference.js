// Reference renderer for the chat-template differential test: generates random conversations
// (seeded), renders them with @huggingface/jinja and writes, per template, a JSONL file of
// {"context": {...}} lines (ringlm's input) and a JSONL file of {"text"} / {"error"} lines
// (the expected output).
//
//   node jinja_reference.js --node-modules DIR --out DIR --seed N --count N TEMPLATE...
//
// Each TEMPLATE is NAME=PATH. The generated data avoids the few places where the JavaScript
// port is known to differ from Python Jinja2 (what transformers uses): integral floats,
// numbers in exponent notation, integer-like object keys, whitespace characters that only one
// of String.trim / str.strip knows, and printing None or booleans directly.
"use strict";
const fs = require("fs");
const path = require("path");

function parseArgs(argv) {
  const opts = { templates: [] };
  for (let i = 2; i < argv.length; ++i) {
    const a = argv[i];
    if (a === "--node-modules") opts.nodeModules = argv[++i];
    else if (a === "--out") opts.out = argv[++i];
    else if (a === "--seed") opts.seed = Number(argv[++i]);
    else if (a === "--count") opts.count = Number(argv[++i]);
    else opts.templates.push(a);
  }
  return opts;
}

// mulberry32: small deterministic PRNG so every run (and every failure) is reproducible.
function makeRng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const rng = {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    chance: (p) => next() < p,
  };
  return rng;
}

const WORDS = ["hello", "world", "Weather", "in", "Paris", "tool", "call", "x", "value", "JSON", "naïve", "café",
  "Привет", "мир", "你好", "世界", "こんにちは", "😀", "🚀", "👩‍💻", "ok", "data", "42", "-7", "3.5", "a_b",
  "quote'", "dq\"", "back\\slash", "{{ not_a_tag }}", "{% nope %}", "<|turn>", "<turn|>", "<|\"|>", "tab\there",
  "e\u0301", "Ω", "ß", "İ", "Ǆ"];
const SPACES = [" ", "  ", "\n", "\n\n", "\t", " \n ", "\r\n", "\u00a0", "\u3000"];

function randomText(rng, maxWords = 8) {
  const n = rng.int(0, maxWords);
  let s = rng.chance(0.2) ? rng.pick(SPACES) : "";
  for (let i = 0; i < n; ++i) {
    if (i) s += rng.chance(0.85) ? " " : rng.pick(SPACES);
    s += rng.pick(WORDS);
  }
  if (rng.chance(0.2)) s += rng.pick(SPACES);
  return s;
}

const KEYS = ["location", "unit", "Count", "query", "limit", "options", "a", "B", "nested", "flag", "items",
  "tags", "name_x", "zeta", "Alpha", "alpha2", "empty"];

function randomNumber(rng) {
  if (rng.chance(0.6)) return rng.int(-1000, 100000);
  // Non-integral values with a short decimal expansion (no exponent notation in either language).
  return rng.int(-99999, 99999) / 100 + (rng.chance(0.5) ? 0.25 : 0.5) * (rng.chance(0.5) ? 1 : -1) + 0.125;
}

function randomJson(rng, depth = 0) {
  const r = rng.next();
  if (depth > 3 || r < 0.35) {
    const k = rng.int(0, 4);
    if (k === 0) return randomText(rng, 3);
    if (k === 1) return randomNumber(rng);
    if (k === 2) return rng.chance(0.5);
    if (k === 3) return null;
    return randomText(rng, 2);
  }
  if (r < 0.65) {
    const n = rng.int(0, 4);
    const out = [];
    for (let i = 0; i < n; ++i) out.push(randomJson(rng, depth + 1));
    return out;
  }
  const n = rng.int(0, 4);
  const out = {};
  for (let i = 0; i < n; ++i) out[rng.pick(KEYS)] = randomJson(rng, depth + 1);
  return out;
}

function randomSchema(rng, depth = 0) {
  const type = depth > 2 ? rng.pick(["string", "integer", "number", "boolean"])
                         : rng.pick(["string", "integer", "number", "boolean", "array", "object"]);
  const s = { type };
  if (rng.chance(0.7)) s.description = randomText(rng, 5);
  if (type === "string" && rng.chance(0.3)) s.enum = [randomText(rng, 1), randomText(rng, 1)];
  if (type === "array" && rng.chance(0.8)) {
    s.items = randomSchema(rng, depth + 1);
    if (s.items.type === "object" && rng.chance(0.5)) s.items.required = Object.keys(s.items.properties || {}).slice(0, 1);
  }
  if (type === "object") {
    s.properties = {};
    const n = rng.int(0, 3);
    for (let i = 0; i < n; ++i) s.properties[rng.pick(KEYS)] = randomSchema(rng, depth + 1);
    if (rng.chance(0.5)) s.required = Object.keys(s.properties).slice(0, rng.int(0, 2));
  }
  if (rng.chance(0.15)) s.nullable = true;
  return s;
}

function randomTool(rng) {
  const fn = { name: rng.pick(["get_weather", "search", "lookup_user", "add", "send_email"]) + rng.int(0, 9),
               description: randomText(rng, 6) };
  if (rng.chance(0.85)) {
    const params = { type: "object", properties: {} };
    const n = rng.int(0, 4);
    for (let i = 0; i < n; ++i) params.properties[rng.pick(KEYS)] = randomSchema(rng, 1);
    if (rng.chance(0.7)) params.required = Object.keys(params.properties).slice(0, rng.int(0, 2));
    fn.parameters = params;
  }
  if (rng.chance(0.2)) fn.response = { type: "object", description: randomText(rng, 3) };
  return { type: "function", function: fn };
}

function randomContent(rng, allowParts, textOnly = false) {
  if (allowParts && rng.chance(0.2)) {
    const parts = [];
    const n = rng.int(1, 3);
    for (let i = 0; i < n; ++i) {
      // (Gemma's template trims every system part's text; the JavaScript port cannot apply
      // `trim` to an undefined value, Python Jinja2 can, so system parts are text only.)
      const k = textOnly ? 0 : rng.int(0, 6);
      if (k <= 2) parts.push({ type: "text", text: randomText(rng) });
      else if (k === 3) parts.push({ type: "image" });
      else if (k === 4) parts.push({ type: "input_audio" });
      else if (k === 5) parts.push({ type: "audio" });
      else parts.push({ type: "video" });
    }
    return parts;
  }
  return randomText(rng);
}

function randomArguments(rng) {
  if (rng.chance(0.15)) return JSON.stringify(randomJson(rng));
  if (rng.chance(0.05)) return null;
  const out = {};
  const n = rng.int(0, 4);
  for (let i = 0; i < n; ++i) out[rng.pick(KEYS)] = randomJson(rng, 1);
  return out;
}

function randomConversation(rng) {
  const messages = [];
  if (rng.chance(0.4)) messages.push({ role: rng.chance(0.9) ? "system" : "developer", content: randomContent(rng, true, true) });
  const turns = rng.int(0, 5);
  let callId = 0;
  for (let t = 0; t < turns; ++t) {
    messages.push({ role: "user", content: randomContent(rng, true) });
    if (t === turns - 1 && rng.chance(0.5)) break;
    const steps = rng.int(1, 2);
    for (let s = 0; s < steps; ++s) {
      const m = { role: "assistant" };
      const withCalls = rng.chance(0.4);
      if (rng.chance(0.8) || !withCalls) {
        let c = randomContent(rng, false);
        if (rng.chance(0.15)) c = "<|channel>thought\n" + randomText(rng) + "<channel|>" + c;
        m.content = c;
      }
      if (rng.chance(0.25)) m[rng.chance(0.5) ? "reasoning_content" : "reasoning"] = randomText(rng);
      if (withCalls) {
        m.tool_calls = [];
        const n = rng.int(1, 2);
        for (let i = 0; i < n; ++i) {
          const call = { type: "function", function: { name: rng.pick(["get_weather", "search", "add"]) + rng.int(0, 2),
                                                        arguments: randomArguments(rng) } };
          if (rng.chance(0.8)) call.id = "call_" + callId++;
          m.tool_calls.push(call);
        }
      }
      messages.push(m);
      if (withCalls && rng.chance(0.85)) {
        for (const call of m.tool_calls) {
          const tm = { role: "tool", content: rng.chance(0.8) ? randomText(rng) : rng.chance(0.9) ? randomContent(rng, true) : { result: randomText(rng, 2) } };
          if (call.id && rng.chance(0.8)) tm.tool_call_id = call.id;
          if (rng.chance(0.3)) tm.name = call.function.name;
          messages.push(tm);
        }
      }
    }
  }
  const ctx = { messages };
  const toolMode = rng.int(0, 3);
  if (toolMode === 1) ctx.tools = null;
  else if (toolMode === 2) ctx.tools = [];
  else if (toolMode === 3) {
    ctx.tools = [];
    const n = rng.int(1, 3);
    for (let i = 0; i < n; ++i) ctx.tools.push(randomTool(rng));
  }
  ctx.add_generation_prompt = rng.chance(0.7);
  if (rng.chance(0.7)) ctx.enable_thinking = rng.chance(0.5);
  if (rng.chance(0.2)) ctx.preserve_thinking = rng.chance(0.5);
  ctx.bos_token = "<bos>";
  ctx.eos_token = "<eos>";
  return ctx;
}

function main() {
  const opts = parseArgs(process.argv);
  const { Template } = require(path.join(opts.nodeModules, "@huggingface", "jinja"));
  const rng = makeRng(opts.seed);
  const contexts = [];
  for (let i = 0; i < opts.count; ++i) contexts.push(randomConversation(rng));
  const inputLines = contexts.map((c) => JSON.stringify({ context: c })).join("\n") + "\n";
  fs.writeFileSync(path.join(opts.out, "cases.jsonl"), inputLines);
  for (const spec of opts.templates) {
    const eq = spec.indexOf("=");
    const name = spec.slice(0, eq);
    const source = fs.readFileSync(spec.slice(eq + 1), "utf8");
    const tmpl = new Template(source);
    const lines = contexts.map((c) => {
      try {
        return JSON.stringify({ text: tmpl.render(c) });
      } catch (e) {
        return JSON.stringify({ error: String(e && e.message ? e.message : e) });
      }
    });
    fs.writeFileSync(path.join(opts.out, name + ".expected.jsonl"), lines.join("\n") + "\n");
  }
}

main();
