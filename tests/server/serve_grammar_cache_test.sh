#!/usr/bin/env bash
# The compiled-schema cache over HTTP: /metrics reports its entries, bytes, bound, hits, misses
# and evictions (issue #19: the server exposes its cache bounds and counts what it keeps). A
# schema seen again is a hit; with --grammar-cache-mb 1 a schema whose index outgrows the bound
# is dropped and the bytes held stay within it.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
source "$(dirname "$0")/serve_lib.sh"
model="$RINGLM_TMP/model"
[[ -f "$model/config.json" ]] ||
  "$RINGLM" make-test-model "$model" --preset demo --seed 6 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
fail() { echo "FAIL: $*" >&2; echo "--- server log:" >&2; cat "$serve_log" >&2; exit 1; }

start_serve --model "$model" --threads 2 --slots 1 --grammar-cache-mb 1
base="http://127.0.0.1:$port"
ask() {  # schema JSON (stdin: a big schema exceeds one argument's limit) -> HTTP status
  "$RINGLM_PYTHON" -c 'import json,sys; print(json.dumps({"max_tokens": 12, "temperature": 0, "messages": [{"role": "user", "content": "go"}], "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": json.load(sys.stdin)}}}))' >"$RINGLM_TMP/body.json"
  curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d @"$RINGLM_TMP/body.json" "$base/v1/chat/completions"
}
a='{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}'
b='{"enum":["red","green","blue"]}'
[[ $(ask <<<"$a") == 200 && $(ask <<<"$a") == 200 && $(ask <<<"$b") == 200 ]] || fail "a guided request failed"
metrics=$(curl -s "$base/metrics")
value() { sed -n "s/^$1 //p" <<<"$metrics"; }
[[ $(value ringlm_grammar_cache_entries) == 2 ]] || fail "entries: $(value ringlm_grammar_cache_entries)"
[[ $(value ringlm_grammar_cache_hits_total) == 1 ]] || fail "hits: $(value ringlm_grammar_cache_hits_total)"
[[ $(value ringlm_grammar_cache_misses_total) == 2 ]] || fail "misses: $(value ringlm_grammar_cache_misses_total)"
[[ $(value ringlm_grammar_cache_max_bytes) == 1048576 ]] || fail "max bytes: $(value ringlm_grammar_cache_max_bytes)"
bytes=$(value ringlm_grammar_cache_bytes)
(( bytes > 0 && bytes <= 1048576 )) || fail "bytes: $bytes"
# A 20,000-value enum: its index alone is over 1 MiB, so the cache cannot keep it.
[[ $("$RINGLM_PYTHON" -c 'import json; print(json.dumps({"enum": ["v%05d" % i for i in range(20000)]}))' | ask) == 200 ]] ||
  fail "the big enum request failed"
metrics=$(curl -s "$base/metrics")
(( $(value ringlm_grammar_cache_evictions_total) >= 1 )) || fail "evictions: $(value ringlm_grammar_cache_evictions_total)"
(( $(value ringlm_grammar_cache_bytes) <= 1048576 )) || fail "bytes over the bound: $(value ringlm_grammar_cache_bytes)"
stop_serve
echo "grammar cache: 2 entries, $bytes bytes; the 1 MiB bound held after the 20,000-value enum"
