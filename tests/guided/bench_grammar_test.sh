#!/usr/bin/env bash
# bench-grammar on a deterministic 1-in-38 subset of JSONSchemaBench (149 files, kept in
# tests/data/jsonschema/jsonschemabench: see tests/data/README.md) with the real
# Gemma tokenizer: no valid instance may be rejected (soundness), mask and accept must agree,
# and coverage must not regress. A smaller subset also runs in the Python whitespace style.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
bench="$RINGLM_TEST_DATA_DIR/jsonschema/jsonschemabench"
tok="$RINGLM_TOKENIZER_DIR"
mapfile -t files < <(cd "$bench" && ls -- *.json | LC_ALL=C sort | sed "s|^|$bench/|")
[ "${#files[@]}" -eq 149 ] || { echo "expected the 149-file subset in $bench, found ${#files[@]}"; exit 1; }

check() {  # $1 = report, $2 = expected file count, $3 = minimum share of files passed
  "$RINGLM_PYTHON" - "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
files, min_pass = int(sys.argv[2]), float(sys.argv[3])
assert d["files"] == files, d["files"]
unsound = [f for f in d["failures"] if f["valid"]]
assert not unsound, "valid instances rejected:\n" + "\n".join(f'{f["file"]}: {f["reason"]}' for f in unsound)
assert d["mask_mismatches"] == 0, d["mask_mismatches"]
assert d["passed"] >= min_pass * files, (d["passed"], files)
for k in ("compiled", "passed", "valid_total", "valid_accepted", "invalid_total", "invalid_rejected",
          "mask_us_p50", "mask_us_p99", "compile_ms_p50", "compile_ms_p99"):
    assert k in d, k
print(f'ok: {d["passed"]}/{files} passed, {d["valid_accepted"]}/{d["valid_total"]} valid accepted, '
      f'{d["invalid_rejected"]}/{d["invalid_total"]} invalid rejected')
PY
}

"$RINGLM" bench-grammar --model "$tok" --json "$RINGLM_TMP/compact.json" "${files[@]}"
check "$RINGLM_TMP/compact.json" "${#files[@]}" 0.85

"$RINGLM" bench-grammar --model "$tok" --whitespace python --json "$RINGLM_TMP/python.json" "${files[@]:0:40}"
check "$RINGLM_TMP/python.json" 40 0.8
