# Shared by the extract_*_test.sh scripts of issue #28/#30 (sourced, not a test itself): a
# demo model, a one-field schema that keeps records short, N rows, and a checker that every
# input id is in an output exactly once with no torn line.
mkdir -p "$RINGLM_TMP" && cd "$RINGLM_TMP"
[[ -f model/config.json ]] ||
  "$RINGLM" make-test-model model --preset demo --seed 3 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
cat > schema.json <<'JSON'
{"type":"object","properties":{"urgent":{"type":"boolean"}},"required":["urgent"],"additionalProperties":false}
JSON
# make_rows FILE N: rows r000.. with a short text each.
make_rows() {
  "$RINGLM_PYTHON" - "$1" "$2" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(json.dumps({"id": f"r{i:03d}", "text": f"order {i} arrived broken"}) + "\n")
PY
}
# every_id_once INPUT OUTPUT: each input id has exactly one record, every line is whole JSON.
every_id_once() {
  "$RINGLM_PYTHON" - "$1" "$2" <<'PY'
import collections, json, sys
ids = [json.loads(l)["id"] for l in open(sys.argv[1]) if l.strip()]
data = open(sys.argv[2], "rb").read()
assert data.endswith(b"\n"), "the output ends in a torn line"
recs = [json.loads(l) for l in data.decode().splitlines()]
count = collections.Counter(r["id"] for r in recs)
assert sorted(count) == sorted(ids), f"ids differ: {len(count)} in the output, {len(ids)} in the input"
assert all(n == 1 for n in count.values()), [k for k, n in count.items() if n > 1]
PY
}
fail() { echo "FAIL: $*" >&2; exit 1; }
