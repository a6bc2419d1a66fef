#!/usr/bin/env bash
# Speculative decoding with --device vulkan (lavapipe in CI), tiny model: the verify rows run
# in the device step (k + 1 logits rows per sequence, each row on the shader its plain step
# runs), and the Gemma 4 assistant drafts from host copies of the device's two KV caches it
# reads (Session::mirror_kv). Greedy `run` with --draft ngram and assistant:PATH gives
# --draft none's reply on the device, drafts really ran (--stats), a guided run gives the same
# record, a seeded sampled run with --draft ngram the same reply, and `extract --parallel 4
# --draft ngram` the same records as --draft none. Passes without running anything where the
# machine has no Vulkan device.
set -euo pipefail
source "$(dirname "$0")/vulkan_lib.sh"
rm -rf model asst run-*.txt run-*.log guided-*.txt sampled-*.txt out-*.jsonl ex.log rows.jsonl
"$RINGLM" make-test-model model --preset tiny --seed 3 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
"$RINGLM" make-test-model asst --assistant --preset tiny --seed 2 2>/dev/null
# A prompt that repeats itself, so prompt lookup finds matches.
prompt="Order AB-1042 for Ana Lee arrived broken. Order AB-1042 for Ana Lee arrived broken. Order AB-1042"
dev=(--device vulkan)
for d in none ngram assistant:asst; do
  "$RINGLM" run --model model "${dev[@]}" --prompt "$prompt" --max-tokens 40 --draft "$d" --draft-max 5 \
    --stats >"run-$d.txt" 2>"run-$d.log"
  "$RINGLM" run --model model "${dev[@]}" --prompt "$prompt" --max-tokens 60 --draft "$d" \
    --json-schema "$RINGLM_SOURCE_DIR/examples/ticket.schema.json" >"guided-$d.txt" 2>"guided-$d.log" || true
done
[[ -s run-none.txt ]] || { echo "FAIL: no reply on the device"; cat run-none.log; exit 1; }
# Seeded sampling: a drafted token is accepted when the plain sample equals it, so the same reply.
for d in none ngram; do
  "$RINGLM" run --model model "${dev[@]}" --prompt "$prompt" --max-tokens 40 --draft "$d" --temperature 0.8 \
    --seed 7 >"sampled-$d.txt" 2>/dev/null
done
cmp sampled-none.txt sampled-ngram.txt || { echo "FAIL: a seeded sampled run --device vulkan --draft ngram changed"; exit 1; }
for d in ngram assistant:asst; do
  cmp run-none.txt "run-$d.txt" || { echo "FAIL: run --device vulkan --draft $d changed the reply or its logprobs"; exit 1; }
  cmp guided-none.txt "guided-$d.txt" || { echo "FAIL: a guided run --device vulkan --draft $d changed the reply"; exit 1; }
done
for d in ngram assistant:asst; do
  grep -q "drafted tokens" "run-$d.log" || { echo "FAIL: --draft $d never drafted on the device"; cat "run-$d.log"; exit 1; }
done

printf '%s\n' '{"id":"a","text":"my order AB-1042 never arrived, order AB-1042"}' '{"id":"b","text":"refund please"}' \
  '{"id":"c","text":"hello hello hello"}' '{"id":"d","text":"the app crashes on start"}' >rows.jsonl
schema="$RINGLM_SOURCE_DIR/examples/ticket.schema.json"
ex() { "$RINGLM" extract --model model "${dev[@]}" --schema "$schema" --input rows.jsonl --max-tokens 80 --no-progress "$@" 2>>ex.log; }
# Exit 3: rows whose records failed (cut at 80 tokens), compared all the same.
ex --output out-none.jsonl --parallel 4 --draft none || [[ $? == 3 ]]
ex --output out-ngram.jsonl --parallel 4 --draft ngram --draft-max 4 || [[ $? == 3 ]]
"$RINGLM_PYTHON" - <<'PY'
import json
def load(p):
    recs = {}
    for line in open(p).read().splitlines():
        r = json.loads(line); r.pop("seconds", None); r.pop("fingerprint", None); recs[r["id"]] = r
    return recs
a, b = load("out-none.jsonl"), load("out-ngram.jsonl")
assert len(a) == 4, a
assert a == b, ("extract --draft ngram on the device differs from --draft none", a, b)
PY
echo "ok"
