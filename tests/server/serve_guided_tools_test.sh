#!/usr/bin/env bash
# `ringlm serve` on a real engine (tiny random-weight model, the real Gemma 4 tokenizer):
# tool_choice naming a function makes the reply a call of that function whose arguments follow
# its parameter schema (non-streamed and streamed), and --schema-in-prompt / the request field
# schema_in_prompt describe the response_format schema to the model (the prompt grows by it).
set -euo pipefail
mkdir -p "$RINGLM_TMP"
source "$(dirname "$0")/serve_lib.sh"
model="$RINGLM_TMP/tiny-tools"
[[ -f "$model/config.json" ]] ||
  "$RINGLM" make-test-model "$model" --preset tiny --seed 4 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
fail() { echo "FAIL: $*" >&2; echo "--- server log:" >&2; cat "$serve_log" >&2; exit 1; }

start_serve --model "$model" --slots 2 --ctx 1024
base="http://127.0.0.1:$port"
tools='[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12},"unit":{"enum":["c","f"]}},"required":["city","unit"],"additionalProperties":false}}},
        {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}}}]'

check_call() {  # $1 = response body: one or more get_weather calls with valid arguments
  "$RINGLM_PYTHON" - "$1" <<'PY' || fail "tool call does not follow the schema: $1"
import json, sys
r = json.loads(sys.argv[1])
choice = r["choices"][0]
assert choice["finish_reason"] == "tool_calls", choice
calls = choice["message"]["tool_calls"]
assert calls, choice
for c in calls:
    assert c["function"]["name"] == "get_weather", c
    a = json.loads(c["function"]["arguments"])
    assert set(a) == {"city", "unit"}, a
    assert isinstance(a["city"], str) and len(a["city"]) <= 12, a
    assert a["unit"] in ("c", "f"), a
PY
}

for seed in 1 2 3; do
  body=$(curl -s "$base/v1/chat/completions" -H 'Content-Type: application/json' -d @- <<JSON
{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":$tools,
 "tool_choice":{"type":"function","function":{"name":"get_weather"}},"max_tokens":60,"temperature":1.0,"seed":$seed}
JSON
)
  check_call "$body"
done

# Streamed: the call arrives as tool_calls deltas whose arguments join into valid JSON.
sse=$(curl -sN "$base/v1/chat/completions" -H 'Content-Type: application/json' -d @- <<JSON
{"messages":[{"role":"user","content":"Weather?"}],"tools":$tools,"tool_choice":"required","max_tokens":60,"temperature":1.0,"seed":7,"stream":true}
JSON
)
"$RINGLM_PYTHON" - "$sse" <<'PY' || fail "streamed tool call: $sse"
import json, sys
names, args, finish = [], {}, None
for line in sys.argv[1].splitlines():
    if not line.startswith("data: ") or line == "data: [DONE]":
        continue
    ch = json.loads(line[6:])["choices"]
    if not ch:
        continue
    d = ch[0].get("delta", {})
    for tc in d.get("tool_calls", []) or []:
        i = tc.get("index", 0)
        if tc.get("function", {}).get("name"):
            names.append(tc["function"]["name"])
        args[i] = args.get(i, "") + tc.get("function", {}).get("arguments", "")
    finish = ch[0].get("finish_reason") or finish
assert finish == "tool_calls", finish
assert names and all(n in ("get_weather", "get_time") for n in names), names
for i, a in args.items():
    json.loads(a)
PY

# schema_in_prompt: the schema goes into a system message, so the prompt is longer.
prompt_tokens() {  # $1 = extra request fields
  curl -s "$base/v1/chat/completions" -H 'Content-Type: application/json' -d @- <<JSON | "$RINGLM_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["usage"]["prompt_tokens"])'
{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,$1
 "response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object","properties":{"answer_text":{"type":"string"}},"required":["answer_text"]}}}}
JSON
}
off=$(prompt_tokens '')
on=$(prompt_tokens '"schema_in_prompt":true,')
[[ $on -gt $((off + 10)) ]] || fail "schema_in_prompt did not describe the schema ($off -> $on prompt tokens)"
stop_serve

start_serve --model "$model" --slots 1 --ctx 1024 --schema-in-prompt
base="http://127.0.0.1:$port"
def=$(prompt_tokens '')
explicit_off=$(prompt_tokens '"schema_in_prompt":false,')
[[ $def -eq $on && $explicit_off -eq $off ]] || fail "--schema-in-prompt: $def (want $on), request false: $explicit_off (want $off)"
stop_serve
echo ok
