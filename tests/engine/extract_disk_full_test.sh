#!/usr/bin/env bash
# `extract` when its output cannot grow (issue #28): a write that fails stops the run with a
# non-zero exit naming the file and how many rows are safely on disk, leaves no torn line,
# and a rerun with room again ends with every id exactly once. First with a file size limit
# (RLIMIT_FSIZE, SIGXFSZ ignored: writes past it fail with EFBIG), which needs no mount; then
# on a real 64 KiB tmpfs where mounting is possible (root), skipped with a note otherwise.
# On the landed main the size limit left a torn line and no count; the full tmpfs gave exit 0.
set -euo pipefail
source "$(dirname "$0")/extract_lib.sh"
make_rows rows.jsonl 120
run() { "$RINGLM" extract --model model --schema schema.json --input rows.jsonl --max-tokens 12 --no-progress "$@"; }

# expect_stopped LOG OUT REASON: the run said why, named the file and the rows on disk, and
# that count is the file's number of complete lines, with nothing after the last one.
expect_stopped() {
  grep -q "$2: write failed: $3" "$1" || { cat "$1" >&2; fail "no '$2: write failed: $3' in $1"; }
  local said lines
  said=$(sed -n 's/.* \([0-9][0-9]*\) row(s) are safely in .*/\1/p' "$1")
  lines=$(wc -l < "$2")
  [[ -n $said && $said == "$lines" ]] || { cat "$1" >&2; fail "said '$said' rows on disk, the file has $lines lines"; }
  [[ $lines -gt 0 && $lines -lt 120 ]] || fail "$lines rows written: the limit did not cut the run"
  [[ $(tail -c 1 "$2" | od -An -tx1 | tr -d ' ') == 0a ]] || fail "$2 ends in a torn line"
  grep -q "rows done" "$1" || fail "no summary line in $1"
}

# 1. File size limit (8 KiB): exit 1, then a rerun without it finishes.
rm -f out1.jsonl
rc=0; ( trap '' XFSZ; ulimit -f 8; exec "$RINGLM" extract --model model --schema schema.json --input rows.jsonl \
  --max-tokens 12 --no-progress --output out1.jsonl ) 2>fsize.log || rc=$?
[[ $rc == 1 ]] || { cat fsize.log >&2; fail "a write past the size limit exited $rc, not 1"; }
expect_stopped fsize.log out1.jsonl "File too large"
echo "size limit: $(wc -l < out1.jsonl) rows kept, exit 1: $(grep -o 'out1.jsonl: write failed.*' fsize.log)"
run --output out1.jsonl 2>rerun1.log || { cat rerun1.log >&2; fail "the rerun failed"; }
every_id_once rows.jsonl out1.jsonl

# 2. A full 64 KiB tmpfs (a filler file leaves ~12 KiB), then the filler removed and a rerun.
mkdir -p small
if mount -t tmpfs -o size=64k tmpfs small 2>mount.log; then
  trap 'umount -l small' EXIT
  head -c 49152 /dev/zero > small/filler
  rc=0; run --output small/out.jsonl 2>full.log || rc=$?
  [[ $rc == 1 ]] || { cat full.log >&2; fail "a full disk exited $rc, not 1"; }
  expect_stopped full.log small/out.jsonl "No space left on device"
  echo "full tmpfs: $(wc -l < small/out.jsonl) rows kept, exit 1"
  rm small/filler
  run --output small/out.jsonl 2>rerun2.log || { cat rerun2.log >&2; fail "the rerun after freeing space failed"; }
  every_id_once rows.jsonl small/out.jsonl
else
  echo "SKIP (tmpfs part): cannot mount a tmpfs here: $(cat mount.log)"
fi
echo "extract disk-full checks passed"
