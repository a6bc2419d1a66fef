#!/usr/bin/env bash
# `extract` keeps its promises: exit status 3 while any row's final record failed, a re-run
# that says why it has nothing to do, --retry-failed that ends with every id ok exactly once,
# and no output file created when the model or the schema is wrong.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
rm -f out.jsonl never.jsonl
[[ -f model/config.json ]] ||
  "$RINGLM" make-test-model model --preset demo --seed 3 --tokenizer "$RINGLM_SHARED_DIR/gemma4-tokenizer" 2>/dev/null
schema="$RINGLM_SOURCE_DIR/examples/ticket.schema.json"
head -n 4 "$RINGLM_SOURCE_DIR/examples/tickets.jsonl" >in.jsonl
run() { "$RINGLM" extract --model model --schema "$schema" --input in.jsonl --output out.jsonl --no-progress "$@"; }

# 1. Two tokens cannot hold a ticket object: every row fails, and the exit status says so.
rc=0; run --max-tokens 2 2>run1.log || rc=$?
[[ $rc == 3 ]] || { echo "expected exit 3 after failed rows, got $rc" >&2; cat run1.log >&2; exit 1; }
[[ $(grep -c '"ok":false' out.jsonl) == 4 ]] || { echo "expected 4 failed records" >&2; cat out.jsonl >&2; exit 1; }

# 2. A plain re-run has nothing to do, says the rows failed, and still exits 3.
rc=0; run --max-tokens 2 2>run2.log || rc=$?
[[ $rc == 3 ]] || { echo "a re-run over failed rows exited $rc, not 3" >&2; exit 1; }
grep -q "0 to do (4 failed; --retry-failed" run2.log || { echo "re-run does not point at --retry-failed" >&2; cat run2.log >&2; exit 1; }

# 3. Half the failed rows retried (--limit 2) with room to finish: still 3, two rows left.
rc=0; run --retry-failed --limit 2 --max-tokens 400 2>run3.log || rc=$?
[[ $rc == 3 ]] || { echo "a partial retry exited $rc, not 3" >&2; cat run3.log >&2; exit 1; }

# 4. The rest: exit 0, every id ok exactly once.
run --retry-failed --max-tokens 400 2>run4.log || { echo "the final retry failed" >&2; cat run4.log >&2; exit 1; }
"$RINGLM_PYTHON" - <<'PY'
import collections, json
ids = [json.loads(l)["id"] for l in open("in.jsonl")]
recs = [json.loads(l) for l in open("out.jsonl")]
count = collections.Counter(r["id"] for r in recs)
assert sorted(count) == sorted(ids), (count, ids)
assert all(n == 1 for n in count.values()), f"ids repeated: {count}"
assert all(r["ok"] for r in recs), [r for r in recs if not r["ok"]]
print("every id ok once:", len(recs), "records")
PY

# 5. Nothing is created when the inputs are wrong: a model that does not exist, a schema
#    that does not compile.
rc=0; "$RINGLM" extract --model no-such-model --schema "$schema" --input in.jsonl --output never.jsonl 2>bad1.log || rc=$?
[[ $rc == 1 && ! -e never.jsonl ]] || { echo "a missing model gave exit $rc or created the output" >&2; cat bad1.log >&2; exit 1; }
echo '{"type":"object","properties":{"a":{"$ref":"#/definitions/missing"}},"required":["a"]}' >bad.schema.json
rc=0; "$RINGLM" extract --model model --schema bad.schema.json --input in.jsonl --output never.jsonl 2>bad2.log || rc=$?
[[ $rc == 1 && ! -e never.jsonl ]] || { echo "a bad schema gave exit $rc or created the output" >&2; cat bad2.log >&2; exit 1; }
echo "extract retry checks passed"
