#!/usr/bin/env bash
# `ringlm extract --parallel N` runs N rows through one batched forward pass per step: under
# greedy decoding every row's record must be the same JSON as with --parallel 1 (only the
# timing field and the line order may differ). `--shard K/N` must split the input by line
# with no gap and no overlap, and the shards together must give the same records again.
set -euo pipefail
mkdir -p "$RINGLM_TMP" && cd "$RINGLM_TMP"
rm -rf model rows.jsonl p1.jsonl p5.jsonl shard-*.jsonl
"$RINGLM" make-test-model model --preset demo --seed 5 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
"$RINGLM_PYTHON" - <<'PY'
import json
names = ["Ana", "Bo", "Chen", "Dee", "Eli", "Fay", "Gus"]
with open("rows.jsonl", "w") as f:
    for i in range(14):
        if i == 6:
            f.write("\n")  # a blank line: shards go by line number, so it changes nothing
        # Different lengths, some sharing their first words.
        text = f"{names[i % 7]} says order AB-{1000 + i} " + "is late " * (i % 4) + "and wants a refund."
        f.write(json.dumps({"id": f"r{i:02d}", "text": text}) + "\n")
PY
schema="$RINGLM_SOURCE_DIR/examples/ticket.schema.json"
run() { "$RINGLM" extract --model model --schema "$schema" --input rows.jsonl --max-tokens 120 --no-progress "$@"; }
run --output p1.jsonl --parallel 1 2>p1.log
run --output p5.jsonl --parallel 5 2>p5.log
for k in 0 1 2; do run --output shard-$k.jsonl --parallel 3 --shard $k/3 2>shard-$k.log; done
cat p5.log
if run --output bad.jsonl --shard 3/3 2>bad.log; then echo "FAIL: --shard 3/3 accepted"; exit 1; fi
grep -q "shard" bad.log
"$RINGLM_PYTHON" - <<'PY'
import json
def load(path):
    recs = [json.loads(l) for l in open(path).read().splitlines()]
    for r in recs:
        r.pop("seconds")
    return recs
p1, p5 = load("p1.jsonl"), load("p5.jsonl")
assert len(p1) == 14 and len(p5) == 14, (len(p1), len(p5))
by1 = {r["id"]: r for r in p1}
by5 = {r["id"]: r for r in p5}
assert by1.keys() == by5.keys() == {f"r{i:02d}" for i in range(14)}
for k in by1:
    assert by1[k] == by5[k], f"{k}: --parallel 1 {by1[k]} vs --parallel 5 {by5[k]}"
assert sum(r["ok"] for r in p1) >= 10, "most rows should give valid JSON"
lines_of = {}
shard_ids = []
for k in range(3):
    recs = load(f"shard-{k}.jsonl")
    for r in recs:
        assert (r["line"] - 1) % 3 == k, f"line {r['line']} in shard {k}"
        assert r == by1[r["id"]], f"shard {k} record {r['id']} differs from --parallel 1"
        shard_ids.append(r["id"])
assert sorted(shard_ids) == sorted(by1), "shards overlap or leave a gap"
print("14 rows: --parallel 5 == --parallel 1 record by record; 3 shards cover every row once")
PY
