#!/usr/bin/env bash
# What a resumed `extract` keeps (issue #30) and how a run ends early (issue #28): every record
# carries a fingerprint of schema, prompt, model and sampling; a rerun with another template
# or temperature, or over records without a fingerprint, stops with exit 1 naming what
# changed and --force-resume (the landed main said "0 to do" and kept the stale rows), which
# then resumes. --ordered writes records in input order; --input - reads standard input.
# SIGINT and SIGTERM stop after the step in flight with the summary line and exit 130 / 143,
# and a rerun finishes every id exactly once.
set -euo pipefail
source "$(dirname "$0")/extract_lib.sh"
args=(--model model --no-progress --max-tokens 12)

# 1. Settings fingerprints.
make_rows rows.jsonl 8
rm -f out.jsonl
"$RINGLM" extract "${args[@]}" --schema schema.json --input rows.jsonl --output out.jsonl 2>base.log
grep -q '"fingerprint":"[0-9a-f]\{8\}-[0-9a-f]\{8\}-[0-9a-f]\{8\}-[0-9a-f]\{8\}"' out.jsonl || fail "no fingerprint in the records"
cp out.jsonl before.jsonl
# changed WHAT TEXT ARGS...: the rerun stops with exit 1, names TEXT and --force-resume, keeps the file.
changed() {
  local what=$1 text=$2 rc=0
  shift 2
  "$RINGLM" extract "${args[@]}" --schema "${schema:-schema.json}" --input rows.jsonl --output out.jsonl "$@" 2>changed.log || rc=$?
  [[ $rc == 1 ]] || { cat changed.log >&2; fail "$what: exit $rc, not 1"; }
  grep -q -- "$text" changed.log && grep -q -- "--force-resume" changed.log ||
    { cat changed.log >&2; fail "$what: the message does not name '$text' and --force-resume"; }
  cmp -s out.jsonl before.jsonl || fail "$what: the output changed"
  echo "$what: $(grep -o 'record(s) [^.]*' changed.log | head -n 1)"
}
changed "another template" "the prompt" --template 'Ticket: {text}'
changed "another temperature" "the sampling" --temperature 0.5
echo '{"type":"object","properties":{"urgent":{"type":"boolean"},"x":{"type":"integer"}},"required":["urgent"],"additionalProperties":false}' > schema2.json
schema=schema2.json changed "another schema" "the schema"
# Records from before fingerprints existed (no field) count as made with other settings.
"$RINGLM_PYTHON" - <<'PY'
import json
recs = [json.loads(l) for l in open("before.jsonl")]
with open("out.jsonl", "w") as f:
    for r in recs:
        r.pop("fingerprint")
        f.write(json.dumps(r, separators=(",", ":")) + "\n")
PY
cp out.jsonl before.jsonl
changed "records without a fingerprint" "no settings fingerprint"
# --force-resume keeps them and runs the new rows only.
make_rows rows.jsonl 12
"$RINGLM" extract "${args[@]}" --schema schema.json --input rows.jsonl --output out.jsonl --force-resume 2>force.log
grep -q "8 already in out.jsonl, 4 to do" force.log || { cat force.log >&2; fail "--force-resume did not resume"; }
every_id_once rows.jsonl out.jsonl

# 2. --ordered: input order, where the plain run finishes out of order (replies of varied length).
cat > schema3.json <<'JSON'
{"type":"object","properties":{"note":{"type":"string","maxLength":60}},"required":["note"],"additionalProperties":false}
JSON
make_rows rows40.jsonl 40
order_args=(--model model --schema schema3.json --no-progress --max-tokens 40 --temperature 1 --seed 5 --parallel 6 --input rows40.jsonl)
rm -f plain.jsonl ordered.jsonl
"$RINGLM" extract "${order_args[@]}" --output plain.jsonl 2>/dev/null || [[ $? == 3 ]]
"$RINGLM" extract "${order_args[@]}" --output ordered.jsonl --ordered 2>/dev/null || [[ $? == 3 ]]
in_order() { "$RINGLM_PYTHON" -c 'import json,sys; ids=[json.loads(l)["id"] for l in open(sys.argv[1])]; sys.exit(0 if ids == sorted(ids) and len(ids) == 40 else 1)' "$1"; }
in_order plain.jsonl && fail "the plain run finished in input order: the --ordered check would prove nothing"
in_order ordered.jsonl || fail "--ordered did not write in input order"
every_id_once rows40.jsonl ordered.jsonl

# 3. --input -: the rows from standard input.
rm -f stdin.jsonl
"$RINGLM" extract "${args[@]}" --schema schema.json --input - --output stdin.jsonl <rows.jsonl 2>/dev/null
every_id_once rows.jsonl stdin.jsonl

# 4. SIGINT / SIGTERM mid-run: the summary, exit 128 + signal, and a rerun finishes.
make_rows many.jsonl 150
for sig in INT TERM; do
  rm -f sig.jsonl
  # A script's background job starts with SIGINT ignored (and extract keeps an ignored signal
  # ignored); this one starts with the default, as from a terminal.
  "$RINGLM_PYTHON" -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$RINGLM" extract "${args[@]}" --schema schema.json --parallel 1 --input many.jsonl --output sig.jsonl 2>sig.log &
  pid=$!
  for _ in $(seq 1 600); do
    [[ $(wc -l < sig.jsonl 2>/dev/null || echo 0) -ge 5 ]] && break
    sleep 0.05
  done
  kill -$sig $pid
  rc=0; wait $pid || rc=$?
  want=$((128 + $(kill -l $sig)))
  [[ $rc == "$want" ]] || { cat sig.log >&2; fail "SIG$sig: exit $rc, not $want"; }
  grep -q "rows done" sig.log && grep -q "stopped by SIG$sig: [0-9]* row(s) are safely in sig.jsonl" sig.log ||
    { cat sig.log >&2; fail "SIG$sig: no summary"; }
  n=$(wc -l < sig.jsonl)
  [[ $n -lt 150 ]] || fail "SIG$sig came after the run ended"
  echo "SIG$sig: $(grep 'stopped by' sig.log)"
  "$RINGLM" extract "${args[@]}" --schema schema.json --input many.jsonl --output sig.jsonl 2>/dev/null
  every_id_once many.jsonl sig.jsonl
done
echo "extract resume-rule checks passed"
