#!/usr/bin/env bash
# Speculative decoding from the command line (issue #33): `run` and `extract` give the same
# output with --draft none, ngram and auto (greedy; extract with several rows in flight),
# drafts really run (--stats counts them), and a bad --draft is a usage error naming it.
# --draft assistant[:PATH] (a random demo-sized assistant): the same reply for run and
# extract --parallel 3, found as MODEL/assistant without PATH, and a missing or
# mismatched assistant is an error naming the path / the mismatch. The same assistant as a
# gemma4-assistant GGUF file (q4_0 and q8_0, on the target's kernels): --draft
# assistant:FILE.gguf gives the same reply (run, guided, extract), MODEL/assistant.gguf is found
# without PATH, and a truncated file is an error naming it.
set -euo pipefail
mkdir -p "$RINGLM_TMP" && cd "$RINGLM_TMP"
rm -rf model rows.jsonl out-*.jsonl asst tiny-asst asst-*.gguf cut.gguf
"$RINGLM" make-test-model model --preset demo --seed 5 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
"$RINGLM" make-test-model asst --assistant --preset demo --seed 2 2>/dev/null
"$RINGLM" make-test-model tiny-asst --assistant --preset tiny --seed 2 2>/dev/null
"$RINGLM" make-test-model asst-q4.gguf --assistant --preset demo --seed 2 --dtype q4_0 2>/dev/null
"$RINGLM" make-test-model asst-q8.gguf --assistant --preset demo --seed 2 --dtype q8_0 2>/dev/null
prompt="Order AB-1042 for Ana Lee arrived broken. Order AB-1042 for Ana Lee arrived broken. Order AB-1042"
for d in none ngram auto assistant:asst assistant:asst-q4.gguf assistant:asst-q8.gguf; do
  "$RINGLM" run --model model --prompt "$prompt" --max-tokens 40 --draft $d --draft-max 5 --stats >run-$d.txt 2>run-$d.log
  "$RINGLM" run --model model --prompt "$prompt" --max-tokens 60 --draft $d \
    --json-schema "$RINGLM_SOURCE_DIR/examples/ticket.schema.json" >guided-$d.txt 2>guided-$d.log || true
done
cmp run-none.txt run-ngram.txt || { echo "FAIL: run --draft ngram changed the reply"; exit 1; }
cmp run-none.txt run-auto.txt || { echo "FAIL: run --draft auto changed the reply"; exit 1; }
cmp run-none.txt run-assistant:asst.txt || { echo "FAIL: run --draft assistant changed the reply"; exit 1; }
cmp guided-none.txt guided-assistant:asst.txt || { echo "FAIL: a guided run --draft assistant changed the reply"; exit 1; }
grep -q "drafted tokens" run-assistant:asst.log || { echo "FAIL: --draft assistant never drafted"; cat run-assistant:asst.log; exit 1; }
for q in q4 q8; do
  cmp run-none.txt run-assistant:asst-$q.gguf.txt || { echo "FAIL: run --draft assistant:asst-$q.gguf changed the reply"; exit 1; }
  cmp guided-none.txt guided-assistant:asst-$q.gguf.txt ||
    { echo "FAIL: a guided run --draft assistant:asst-$q.gguf changed the reply"; exit 1; }
  grep -q "drafted tokens" run-assistant:asst-$q.gguf.log ||
    { echo "FAIL: --draft assistant:asst-$q.gguf never drafted"; cat run-assistant:asst-$q.gguf.log; exit 1; }
done
head -c 100000 asst-q4.gguf >cut.gguf
if "$RINGLM" run --model model --prompt hi --max-tokens 4 --draft assistant:cut.gguf 2>cut.log; then
  echo "FAIL: a truncated assistant GGUF ran"; exit 1
fi
grep -q "cut.gguf" cut.log || { echo "FAIL: the truncated-file error does not name the file"; cat cut.log; exit 1; }
# Without PATH: MODEL/assistant.
if "$RINGLM" run --model model --prompt hi --max-tokens 4 --draft assistant 2>noasst.log; then
  echo "FAIL: --draft assistant without an assistant next to the model ran"; exit 1
fi
grep -q "model/assistant/config.json" noasst.log || { echo "FAIL: the error does not say where it looked"; cat noasst.log; exit 1; }
cp -r asst model/assistant
"$RINGLM" run --model model --prompt "$prompt" --max-tokens 40 --draft assistant --draft-max 5 >run-default.txt 2>/dev/null
cmp run-none.txt run-default.txt || { echo "FAIL: run --draft assistant (MODEL/assistant) changed the reply"; exit 1; }
rm -rf model/assistant
cp asst-q4.gguf model/assistant.gguf
"$RINGLM" run --model model --prompt "$prompt" --max-tokens 40 --draft assistant --draft-max 5 --stats >run-default-gguf.txt 2>run-default-gguf.log
cmp run-none.txt run-default-gguf.txt || { echo "FAIL: run --draft assistant (MODEL/assistant.gguf) changed the reply"; exit 1; }
grep -q "drafted tokens" run-default-gguf.log || { echo "FAIL: MODEL/assistant.gguf never drafted"; exit 1; }
rm -f model/assistant.gguf
if "$RINGLM" run --model model --prompt hi --draft assistant:tiny-asst 2>mismatch.log; then echo "FAIL: a mismatched assistant ran"; exit 1; fi
grep -q "tiny-asst/config.json" mismatch.log && grep -q "vocab_size" mismatch.log ||
  { echo "FAIL: the mismatch error does not name the file and field"; cat mismatch.log; exit 1; }
cmp guided-none.txt guided-ngram.txt || { echo "FAIL: a guided run --draft ngram changed the reply"; exit 1; }
if grep -q "drafted" run-none.log; then echo "FAIL: --draft none drafted"; exit 1; fi
grep -q "drafted tokens" run-ngram.log || { echo "FAIL: run --draft ngram never drafted"; cat run-ngram.log; exit 1; }

"$RINGLM_PYTHON" - <<'PY'
import json
with open("rows.jsonl", "w") as f:
    for i in range(6):
        text = f"Customer Bo Chen says order AB-{2000 + i} is late; order AB-{2000 + i} was paid." * (1 + i % 2)
        f.write(json.dumps({"id": f"r{i}", "text": text}) + "\n")
PY
for d in none ngram assistant:asst assistant:asst-q4.gguf; do
  "$RINGLM" extract --model model --schema "$RINGLM_SOURCE_DIR/examples/ticket.schema.json" --input rows.jsonl \
    --max-tokens 80 --no-progress --parallel 3 --draft $d --output out-$d.jsonl 2>extract-$d.log
done
"$RINGLM_PYTHON" - <<'PY'
import json
def load(p):
    recs = {}
    for line in open(p):
        r = json.loads(line)
        recs[r["id"]] = {k: v for k, v in r.items() if k not in ("ms", "seconds", "elapsed_ms", "time_ms")}
    return recs
a = load("out-none.jsonl")
for other in ("out-ngram.jsonl", "out-assistant:asst.jsonl", "out-assistant:asst-q4.gguf.jsonl"):
    b = load(other)
    assert a.keys() == b.keys() and len(a) == 6, (other, sorted(a), sorted(b))
    for k in a:
        assert a[k] == b[k], (other, k, a[k], b[k])
PY

if "$RINGLM" run --model model --prompt hi --draft bogus 2>bad.log; then echo "FAIL: --draft bogus accepted"; exit 1; fi
grep -q "bogus" bad.log || { echo "FAIL: the error does not name the value"; cat bad.log; exit 1; }
if "$RINGLM" serve --model model --draft-max 17 2>bad2.log; then echo "FAIL: --draft-max 17 accepted"; exit 1; fi
grep -q -- "--draft-max" bad2.log || { cat bad2.log; exit 1; }
# bench --sections draft --draft-rounds: none / none-d / auto / always per rate and round, on
# warm schedulers; the bench itself fails if a drafted run's output differs from the plain one.
"$RINGLM" bench --model model --sections draft --draft-rounds 2 --draft-decode-tokens 12 --draft-rates 0,1 \
  --draft-warm --json rounds.json >rounds.txt 2>&1 || { echo "FAIL: bench --draft-rounds"; cat rounds.txt; exit 1; }
"$RINGLM_PYTHON" - rounds.json <<'PY' || { echo "FAIL: bench --draft-rounds figures"; cat rounds.txt; exit 1; }
import json, sys
d = json.load(open(sys.argv[1]))["draft"]
assert d["rounds"] == 2 and d["warm"] is True, d
assert [r["rate"] for r in d["summary"]] == [0.0, 1.0], d["summary"]
runs = d["runs"]
assert len(runs) == 2 * 2 * 4, len(runs)
for rate in (0.0, 1.0):
    for policy in ("none", "none-d", "auto", "always"):
        these = [r for r in runs if r["rate"] == rate and r["policy"] == policy]
        assert len(these) == 2, (rate, policy)
        assert len({r["order"] for r in these}) == 2, ("the order rotates", these)
        if policy.startswith("none"):
            assert all(r["drafted"] == 0 for r in these), these
always_full = [r for r in runs if r["rate"] == 1.0 and r["policy"] == "always"]
assert all(r["accepted"] > 0 for r in always_full), always_full
assert all(r["accepted"] == 0 for r in runs if r["rate"] == 0.0), "0 % accepts nothing"
PY
echo OK
