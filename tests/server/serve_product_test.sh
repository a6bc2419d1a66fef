#!/usr/bin/env bash
# `ringlm serve` as a user meets it, on the demo-size model (real engine): the model flags
# every command takes, the demo-model notice, keys of a guided reply in schema order (a
# "reasoning first" schema whose keys are not alphabetical), the page at /, --api-key (401
# without it on /v1, /health stays open), --cors-origin (preflight and grant), and one
# access-log line per request.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
source "$(dirname "$0")/serve_lib.sh"
model="$RINGLM_TMP/model"
[[ -f "$model/config.json" ]] ||
  "$RINGLM" make-test-model "$model" --preset demo --seed 3 --tokenizer "$RINGLM_SHARED_DIR/gemma4-tokenizer" 2>/dev/null

fail() { echo "FAIL: $*" >&2; echo "--- server log:" >&2; cat "$serve_log" >&2; exit 1; }
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

# The same model flags as run/chat/extract (-m, --threads, --weights, --activations, --ctx),
# and no --model means the demo model, with its notice.
RINGLM_DEMO_MODEL="$model" start_serve --threads 2 --weights q4_0 --activations int8x2 --ctx 1024 \
  --api-key s3cret --cors-origin http://ui.example
grep -q "built-in DEMO model" "$serve_log" || fail "no demo-model notice without --model"
base="http://127.0.0.1:$port"
auth=(-H "Authorization: Bearer s3cret")

# --api-key: 401 on every /v1 route without (or with a wrong) key; /health and / stay open.
[[ $(code "$base/v1/models") == 401 ]] || fail "GET /v1/models without a key is not 401"
[[ $(code -H "Authorization: Bearer wrong" "$base/v1/models") == 401 ]] || fail "a wrong key is not 401"
[[ $(code -X POST -d '{}' "$base/v1/chat/completions") == 401 ]] || fail "POST /v1/chat/completions without a key is not 401"
[[ $(code -X POST -d '{}' "$base/v1/completions") == 401 ]] || fail "POST /v1/completions without a key is not 401"
grep -q '"code":"invalid_api_key"' <<<"$(curl -s "$base/v1/models")" || fail "401 body lacks code invalid_api_key"
[[ $(code "${auth[@]}" "$base/v1/models") == 200 ]] || fail "GET /v1/models with the key is not 200"
grep -q '"context_length":1024' <<<"$(curl -s "${auth[@]}" "$base/v1/models")" || fail "--ctx 1024 is not the served context"
[[ $(code "$base/health") == 200 ]] || fail "/health needs no key"

# The page and its assets, compiled into the binary.
page=$(curl -s -D "$RINGLM_TMP/page.headers" "$base/")
grep -qi '^content-type: text/html' "$RINGLM_TMP/page.headers" || fail "/ is not text/html"
grep -q '<title>ringlm</title>' <<<"$page" || fail "/ is not the ringlm page"
for asset in $(grep -o '/ui/[a-z_]*\.[a-z]*' <<<"$page" | sort -u); do
  [[ $(code "$base$asset") == 200 ]] || fail "$asset referenced by / is not served"
done
[[ $(code "$base/ui/missing.js") == 404 ]] || fail "an unknown asset is not 404"

# CORS: a preflight from the allowed origin is granted (no key needed), another origin is not.
pre=$(curl -s -D - -o /dev/null -X OPTIONS -H "Origin: http://ui.example" \
  -H "Access-Control-Request-Method: POST" -H "Access-Control-Request-Headers: authorization,content-type" \
  "$base/v1/chat/completions")
grep -q '^HTTP/1.1 204' <<<"$pre" || fail "preflight is not 204: $pre"
grep -qi '^access-control-allow-origin: http://ui.example' <<<"$pre" || fail "preflight lacks the origin grant"
grep -qi '^access-control-allow-headers:.*authorization' <<<"$pre" || fail "preflight does not allow Authorization"
other=$(curl -s -D - -o /dev/null -H "Origin: http://evil.example" "${auth[@]}" "$base/v1/models")
! grep -qi '^access-control-allow-origin' <<<"$other" || fail "another origin got a CORS grant"

# Keys in schema order over HTTP, non-streamed and streamed, top level and nested.
schema='{"type":"object","properties":{"zeta_reasoning":{"type":"string","maxLength":40},
  "alpha_answer":{"type":"string","enum":["yes","no"]},
  "mid":{"type":"object","properties":{"z":{"type":"integer"},"a":{"type":"boolean"}},"required":["z","a"],"additionalProperties":false}},
  "required":["zeta_reasoning","alpha_answer","mid"],"additionalProperties":false}'
body() {
  printf '{"messages":[{"role":"user","content":"Is the sky blue?"}],"max_tokens":200,"temperature":0,"stream":%s,
    "response_format":{"type":"json_schema","json_schema":{"name":"r","schema":%s}}}' "$1" "$schema"
}
curl -s "${auth[@]}" -d "$(body false)" "$base/v1/chat/completions" >"$RINGLM_TMP/reply.json"
curl -s -N "${auth[@]}" -d "$(body true)" "$base/v1/chat/completions" >"$RINGLM_TMP/reply.sse"
"$RINGLM_PYTHON" - "$RINGLM_TMP/reply.json" "$RINGLM_TMP/reply.sse" <<'PY' || fail "key order"
import json, sys
pairs = lambda kv: kv  # keep the pairs, in the order they came
def keys(text):
    v = json.loads(text, object_pairs_hook=pairs)
    top = [k for k, _ in v]
    mid = [k for k, _ in dict(v)["mid"]]
    return top, mid
reply = json.load(open(sys.argv[1]))
content = reply["choices"][0]["message"]["content"]
streamed = ""
for line in open(sys.argv[2]):
    if line.startswith("data: {"):
        for c in json.loads(line[6:])["choices"]:
            streamed += c["delta"].get("content") or ""
for name, text in (("non-streamed", content), ("streamed", streamed)):
    top, mid = keys(text)
    assert top == ["zeta_reasoning", "alpha_answer", "mid"], (name, top, text)
    assert mid == ["z", "a"], (name, mid, text)
print("key order ok:", content)
PY

# One access-log line per request: method, path, status, tokens, ms.
grep -Eq 'ringlm serve: 127\.0\.0\.1 GET /v1/models 401 tokens=- [0-9.]+ ms' "$serve_log" || fail "no access line for the 401"
n=$(grep -Ec 'ringlm serve: 127\.0\.0\.1 POST /v1/chat/completions 200 tokens=[0-9]+\+[0-9]+ [0-9.]+ ms' "$serve_log")
[[ $n == 2 ]] || fail "expected 2 access lines for the guided requests, found $n"
stop_serve

# --no-access-log and --no-web-ui switch them off; an explicit -m works like --model.
start_serve -m "$model" --no-access-log --no-web-ui
[[ $(code "http://127.0.0.1:$port/") == 404 ]] || fail "--no-web-ui still serves /"
[[ $(code "http://127.0.0.1:$port/v1/models") == 200 ]] || fail "no key configured, yet /v1/models is not 200"
! grep -q "ringlm serve: 127.0.0.1 GET" "$serve_log" || fail "--no-access-log still logs"
! grep -q "DEMO model" "$serve_log" || fail "demo notice with an explicit -m"
stop_serve
echo "serve product checks passed"
