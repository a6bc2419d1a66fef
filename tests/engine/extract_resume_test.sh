#!/usr/bin/env bash
# `ringlm extract` over 50 rows, killed with SIGKILL in the middle, then resumed: the output
# must hold exactly 50 records, one per row id, each valid against the schema (checked by
# Python's jsonschema, an implementation independent of ringlm's validator).
set -euo pipefail
mkdir -p "$RINGLM_TMP" && cd "$RINGLM_TMP"
rm -rf model rows.jsonl out.jsonl
"$RINGLM" make-test-model model --preset demo --seed 3 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
"$RINGLM_PYTHON" - <<'PY'
import json
names = ["Ana", "Bo", "Chen", "Dee", "Eli"]
with open("rows.jsonl", "w") as f:
    for i in range(50):
        f.write(json.dumps({"id": f"r{i:02d}", "text": f"{names[i % 5]} reports problem number {i} with order AB-{1000 + i}."}) + "\n")
PY
schema="$RINGLM_SOURCE_DIR/examples/ticket.schema.json"
"$RINGLM" extract --model model --schema "$schema" --input rows.jsonl --output out.jsonl \
  --max-tokens 400 --temperature 1 --seed 7 --no-progress 2>extract1.log &
pid=$!
# Kill it once some rows are done (but not all).
for _ in $(seq 1 600); do
  n=$(wc -l < out.jsonl 2>/dev/null || echo 0)
  if [ "$n" -ge 12 ]; then break; fi
  if ! kill -0 $pid 2>/dev/null; then break; fi
  sleep 0.05
done
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
before=$(wc -l < out.jsonl)
echo "killed after $before complete rows"
if [ "$before" -ge 50 ]; then echo "FAIL: the job finished before it could be killed"; exit 1; fi
# Simulate a kill in the middle of a write: a torn last line.
printf '{"id": "r99", "ok": tr' >> out.jsonl
"$RINGLM" extract --model model --schema "$schema" --input rows.jsonl --output out.jsonl \
  --max-tokens 400 --temperature 1 --seed 7 --no-progress 2>extract2.log
cat extract2.log
"$RINGLM_PYTHON" - "$schema" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
lines = open("out.jsonl").read().splitlines()
recs = [json.loads(l) for l in lines]
ids = [r["id"] for r in recs]
assert len(recs) == 50, f"{len(recs)} records"
assert sorted(ids) == [f"r{i:02d}" for i in range(50)], "rows lost or duplicated"
bad = [r for r in recs if not r["ok"]]
assert not bad, f"failed rows: {bad[:2]}"
for r in recs:
    jsonschema.validate(r["output"], schema, format_checker=jsonschema.FormatChecker())
print("50 passed, 0 failed: every row once, every output valid")
PY
