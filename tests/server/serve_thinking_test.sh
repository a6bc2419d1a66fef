#!/usr/bin/env bash
# `ringlm serve` on a real engine (tiny random-weight model, the real Gemma 4 tokenizer and
# chat template), thinking with a json_schema response_format (issue #16):
# - chat_template_kwargs.enable_thinking renders the template with thinking on (the prompt
#   grows by the template's thinking instruction);
# - with it, `content` always parses and validates against the schema and never holds
#   thought-channel text; a thought, where the model opens one, is in reasoning_content, and
#   streamed as delta.reasoning_content chunks before the delta.content chunks;
# - without it, the reply is as before: no reasoning_content, a valid answer in content;
# The random model seldom opens the thought channel on its own; where it does, thinking_budget
# closes the thought after a few tokens so that the answer follows.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
source "$(dirname "$0")/serve_lib.sh"
model="$RINGLM_TMP/tiny-think"
[[ -f "$model/config.json" ]] ||
  "$RINGLM" make-test-model "$model" --preset tiny --seed 4 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
fail() { echo "FAIL: $*" >&2; echo "--- server log:" >&2; cat "$serve_log" >&2; exit 1; }

start_serve --model "$model" --slots 2 --ctx 1024
base="http://127.0.0.1:$port"
out="$RINGLM_TMP/replies"
rm -rf "$out" && mkdir -p "$out"

ask() {  # $1 = seed, $2 = extra fields, $3 = file
  curl -s "$base/v1/chat/completions" -H 'Content-Type: application/json' -o "$3" -d @- <<JSON
{"messages":[{"role":"user","content":"Is it on? Reply in JSON."}],"max_tokens":80,"temperature":2.0,"seed":$1,$2
 "response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer","minimum":0,"maximum":9}},"required":["ok","n"],"additionalProperties":false}}}}
JSON
}

think='"chat_template_kwargs":{"enable_thinking":true},"thinking_budget":4,'
for seed in $(seq 0 39); do
  ask "$seed" "$think" "$out/think.$seed.json"
  ask "$seed" '' "$out/plain.$seed.json"
  ask "$seed" "$think\"stream\":true," "$out/stream.$seed.sse"
done

"$RINGLM_PYTHON" - "$out" <<'PY' || fail "thinking replies"
import json, os, sys
d = sys.argv[1]
def check(v):
    assert isinstance(v, dict) and set(v) == {"ok", "n"}, v
    assert isinstance(v["ok"], bool) and isinstance(v["n"], int) and 0 <= v["n"] <= 9, v
thoughts = 0
for seed in range(40):
    t = json.load(open(f"{d}/think.{seed}.json"))
    p = json.load(open(f"{d}/plain.{seed}.json"))
    for r in (t, p):
        assert r["choices"][0]["finish_reason"] == "stop", r
    tm, pm = t["choices"][0]["message"], p["choices"][0]["message"]
    for m in (tm, pm):
        assert "<|channel>" not in m["content"] and "<channel|>" not in m["content"], m
        check(json.loads(m["content"]))
    assert "reasoning_content" not in pm, pm  # off: unchanged
    assert t["usage"]["prompt_tokens"] > p["usage"]["prompt_tokens"], (t["usage"], p["usage"])
    reasoning, content, order = "", "", ""
    for line in open(f"{d}/stream.{seed}.sse").read().splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ch = json.loads(line[6:])["choices"]
        delta = ch[0]["delta"] if ch else {}
        if delta.get("reasoning_content"):
            assert "c" not in order, f"seed {seed}: reasoning after content"
            reasoning += delta["reasoning_content"]
            order += "r"
        if delta.get("content"):
            content += delta["content"]
            order += "c"
    check(json.loads(content))
    assert "<|channel>" not in content and "<channel|>" not in content, content
    if "reasoning_content" in tm:
        thoughts += 1
        assert tm["reasoning_content"].strip(), tm
        assert "<|channel>" not in tm["reasoning_content"] and "<channel|>" not in tm["reasoning_content"], tm
    assert "<|channel>" not in reasoning and "<channel|>" not in reasoning, reasoning
    # Streamed and non-streamed replies are not compared here: the streamed request's prompt
    # reuses the first one's prefix-cache blocks, so its last prefill chunk differs and at
    # temperature 2.0 a last-bit difference can change a sample. http_api_test compares them
    # on the fake backend.
    if reasoning:
        thoughts += 1
print(f"{thoughts} of 80 replies (40 seeds, plain and streamed) thought first")
# Not asserted: the random model opens the thought channel rarely (0 of 80 in the runs so far);
# engine.Generator's thinking test and the fake-backend http_api_test cover a thought first.
PY

# Wrong types are refused, naming the field.
code=$(curl -s -o "$out/bad.json" -w '%{http_code}' "$base/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"enable_thinking":"yes"}}')
[[ $code == 400 ]] || fail "bad enable_thinking gave $code"
grep -q 'chat_template_kwargs.enable_thinking' "$out/bad.json" || fail "400 does not name the field: $(cat "$out/bad.json")"
stop_serve
echo "serve thinking: ok"
