#!/usr/bin/env bash
# `ringlm extract` over 30 rows, SIGKILLed at random points again and again (each run resumes
# the last one's output), then run to completion. After every kill the output must be valid
# JSONL (every finished line parses; at most an unfinished tail without a newline) with no row
# id twice; at the end it must hold exactly one ok record per row, each valid against the
# schema by Python's jsonschema (independent of ringlm's validator).
# extract_resume_test.sh covers the single kill + torn last line case; this one the loop.
set -euo pipefail
mkdir -p "$RINGLM_TMP" && cd "$RINGLM_TMP"
rm -rf model rows.jsonl out.jsonl ./*.log
"$RINGLM" make-test-model model --preset demo --seed 1 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
rows=30
"$RINGLM_PYTHON" - "$rows" <<'PY'
import json, sys
names = ["Ana", "Bo", "Chen", "Dee", "Eli", "Fay"]
with open("rows.jsonl", "w") as f:
    for i in range(int(sys.argv[1])):
        f.write(json.dumps({"id": f"k{i:02d}", "text": f"{names[i % 6]}: order XY-{2000 + i} arrived broken, case {i}."}) + "\n")
PY
schema="$RINGLM_SOURCE_DIR/examples/ticket.schema.json"
extract=("$RINGLM" extract --model model --schema "$schema" --input rows.jsonl --output out.jsonl
  --max-tokens 300 --temperature 1 --seed 11 --no-progress)
# Running, not exited: kill -0 also succeeds on a zombie that nobody has waited for yet.
alive() { local _pid _comm state; read -r _pid _comm state _ < "/proc/$1/stat" 2>/dev/null && [ "$state" != Z ]; }
records() { if [ -f out.jsonl ]; then wc -l < out.jsonl; else echo 0; fi; }  # finished lines
check_partial() {
  "$RINGLM_PYTHON" - <<'PY'
import json
data = open("out.jsonl", "rb").read() if __import__("os").path.exists("out.jsonl") else b""
lines = data.split(b"\n")
tail = lines.pop()  # b"" when the file ends with a newline
ids = [json.loads(l)["id"] for l in lines]
assert len(ids) == len(set(ids)), f"duplicate row ids: {sorted(ids)}"
print(f"{len(ids)} complete records" + (f", {len(tail)}-byte unfinished tail" if tail else ""))
PY
}

RANDOM=20261130  # a fixed sequence of kill points, so a failure reproduces
kills=0
for round in 1 2 3 4 5 6; do
  # Started directly (not through a function, which would background a subshell): $! must be
  # ringlm itself, or the kill would leave it running.
  "${extract[@]}" 2>"extract$round.log" &
  pid=$!
  # Kill point: once this run has written a random 1 to 3 new records, so every round makes
  # progress and the kill lands among row writes, never during model load. Progress is what
  # the loop waits for, not time: a fast machine would finish all rows within a fixed sleep
  # (6 rounds take at most 18 of the 30 rows, so every round has rows left to kill).
  target=$(( $(records) + 1 + RANDOM % 3 ))
  while [ "$(records)" -lt "$target" ] && alive $pid; do sleep 0.01; done
  if alive $pid && kill -9 $pid 2>/dev/null; then
    wait $pid 2>/dev/null || true
    kills=$((kills + 1))
    echo -n "kill $kills (round $round): "
  else
    wait $pid || { cat "extract$round.log"; exit 1; }
    echo -n "round $round finished before its kill: "
  fi
  check_partial
done
"${extract[@]}" 2>final.log || { cat final.log; exit 1; }
"$RINGLM_PYTHON" - "$schema" "$rows" "$kills" <<'PY'
import json, sys, jsonschema
schema, rows, kills = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
text = open("out.jsonl").read()
assert text.endswith("\n"), "output does not end with a newline"
recs = [json.loads(l) for l in text.splitlines()]
ids = [r["id"] for r in recs]
assert sorted(ids) == [f"k{i:02d}" for i in range(rows)], f"rows lost or duplicated: {sorted(ids)}"
bad = [r for r in recs if not r["ok"]]
assert not bad, f"failed rows: {bad[:2]}"
for r in recs:
    jsonschema.validate(r["output"], schema, format_checker=jsonschema.FormatChecker())
assert kills == 6, f"only {kills} of 6 kills landed mid-run"
print(f"survived {kills} SIGKILLs: {rows} rows, each exactly once, every output valid")
PY
