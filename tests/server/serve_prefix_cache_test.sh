#!/usr/bin/env bash
# The shared prefix cache over HTTP, on the demo-size model with one slot: a request whose
# system prompt an earlier request computed reuses its KV although another conversation took
# the slot in between (the slot's own cache cannot supply it), and /metrics reports the hit,
# the misses and the bytes held, within the bound.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
source "$(dirname "$0")/serve_lib.sh"
model="$RINGLM_TMP/model"
[[ -f "$model/config.json" ]] ||
  "$RINGLM" make-test-model "$model" --preset demo --seed 6 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
fail() { echo "FAIL: $*" >&2; echo "--- server log:" >&2; cat "$serve_log" >&2; exit 1; }

start_serve --model "$model" --threads 2 --ctx 1024 --slots 1 --prefix-cache-mb 8
base="http://127.0.0.1:$port"
system="You are the support assistant of a parcel company. Answer in one short sentence, name the order id when one is given, and never invent tracking numbers or delivery dates."
ask() {  # system, user -> the reply's cached_tokens
  local body
  body=$("$RINGLM_PYTHON" -c 'import json,sys; print(json.dumps({"max_tokens": 2, "temperature": 0, "messages": ([{"role": "system", "content": sys.argv[1]}] if sys.argv[1] else []) + [{"role": "user", "content": sys.argv[2]}]}))' "$1" "$2")
  curl -s -H "Content-Type: application/json" -d "$body" "$base/v1/chat/completions" |
    "$RINGLM_PYTHON" -c 'import json,sys; r=json.load(sys.stdin); print(r["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0), r["usage"]["prompt_tokens"])'
}
read -r c1 p1 <<<"$(ask "$system" "Where is order AB-1234?")"
read -r c2 _ <<<"$(ask "" "Write a haiku about the sea, with a title and three lines, nothing else.")"
read -r c3 p3 <<<"$(ask "$system" "I was charged twice for order ZX-9.")"
[[ $c1 -eq 0 ]] || fail "the first request reused $c1 tokens from nowhere"
(( p1 > 40 )) || fail "the system prompt is too short to test ($p1 tokens)"
# The system turn is ~40 tokens: at least its whole 16-token blocks come from the cache.
(( c3 >= 32 )) || fail "the third request reused only $c3 of $p3 prompt tokens"
metrics=$(curl -s "$base/metrics")
value() { sed -n "s/^$1 //p" <<<"$metrics"; }
[[ $(value ringlm_prefix_cache_shared_hits_total) == 1 ]] || fail "shared hits: $(value ringlm_prefix_cache_shared_hits_total)"
# (the slot itself still held the few tokens every chat prompt starts with: the cache gave the rest)
shared=$(value ringlm_prefix_cache_shared_tokens_total)
(( shared >= c3 - 8 && shared <= c3 )) || fail "shared tokens $shared for a request that reused $c3"
# Only the first request reused nothing (the haiku shares the chat prompt's first tokens with
# what the slot held).
(( $(value ringlm_prefix_cache_misses_total) == 1 )) || fail "misses: $(value ringlm_prefix_cache_misses_total)"
(( $(value ringlm_prefix_cache_hits_total) == 2 )) || fail "hits: $(value ringlm_prefix_cache_hits_total)"
bytes=$(value ringlm_prefix_cache_bytes)
(( bytes > 0 && bytes <= 8 * 1048576 )) || fail "prefix cache bytes $bytes"
[[ $(value ringlm_prefix_cache_max_bytes) == 8388608 ]] || fail "max bytes $(value ringlm_prefix_cache_max_bytes)"
(( $(value ringlm_prefix_cache_blocks) * 16 <= p1 + p3 + 60 )) || fail "blocks $(value ringlm_prefix_cache_blocks)"
stop_serve
echo "prefix cache: request 3 reused $c3 of $p3 prompt tokens; $bytes bytes held"
