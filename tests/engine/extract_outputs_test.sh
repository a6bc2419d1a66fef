#!/usr/bin/env bash
# `extract` outputs that cannot hold the job, and the ones that can (issue #28): the input as
# the output (by any name) is refused and left untouched; /dev/stdout into a pipe and
# /dev/zero are refused at once (the landed main hung, and grew to bad_alloc), as is a
# /dev/zero schema; `--output -` writes every record to standard output line by line;
# `--retry-failed` on a symlinked, mode-600 output owned by another user rewrites the target
# and keeps the link, the mode and the owner (the landed main made the link a plain 644 file).
set -euo pipefail
source "$(dirname "$0")/extract_lib.sh"
make_rows rows.jsonl 6
args=(--model model --no-progress)

# refused WHAT EXPECTED_TEXT ARGS...: exits 1 within 30 s, saying EXPECTED_TEXT.
refused() {
  local what=$1 text=$2 rc=0
  shift 2
  # Standard output is a pipe, as in `extract ... | cat`.
  timeout 30 "$RINGLM" extract "${args[@]}" --schema "${schema:-schema.json}" "$@" 2>refused.log > >(cat >/dev/null) && rc=0 || rc=$?
  [[ $rc == 1 ]] || { cat refused.log >&2; fail "$what: exit $rc, not 1 (124: it hung)"; }
  grep -q -- "$text" refused.log || { cat refused.log >&2; fail "$what: no '$text'"; }
  echo "refused $what: $(tail -n 1 refused.log)"
}

cp rows.jsonl keep.jsonl
ln -sf rows.jsonl rows-link.jsonl
refused "the input as output" "the same file as" --input rows.jsonl --output rows.jsonl
refused "the input through a link" "the same file as" --input rows.jsonl --output rows-link.jsonl
refused "standard input as output" "the same file as standard input" --input - --output rows.jsonl <rows.jsonl
cmp -s rows.jsonl keep.jsonl || fail "the input changed"
refused "/dev/stdout into a pipe" "not a regular file" --input rows.jsonl --output /dev/stdout
refused "/dev/zero as output" "not a regular file" --input rows.jsonl --output /dev/zero
schema=/dev/zero refused "/dev/zero as schema" "is a device" --input rows.jsonl --output z.jsonl
refused "--retry-failed to stdout" "cannot be standard output" --input rows.jsonl --output - --retry-failed
[[ ! -e z.jsonl ]] || fail "a refused run created its output"

# --output -: every record on standard output, through a pipe, nothing else there.
timeout 120 "$RINGLM" extract "${args[@]}" --schema schema.json --input rows.jsonl --output - --max-tokens 12 2>stdout.log | cat > piped.jsonl
every_id_once rows.jsonl piped.jsonl

# --retry-failed through a symlink to a mode-600 file owned by nobody.
mkdir -p real && rm -f real/out.jsonl out-link.jsonl
ln -s real/out.jsonl out-link.jsonl
rc=0; "$RINGLM" extract "${args[@]}" --schema schema.json --input rows.jsonl --output out-link.jsonl --max-tokens 2 2>r1.log || rc=$?
[[ $rc == 3 ]] || { cat r1.log >&2; fail "two tokens should fail every row (exit 3), got $rc"; }
chmod 600 real/out.jsonl
owner=$(id -u):$(id -g)
if [[ $(id -u) == 0 ]]; then chown 65534:65534 real/out.jsonl; owner=65534:65534; fi
"$RINGLM" extract "${args[@]}" --schema schema.json --input rows.jsonl --output out-link.jsonl --max-tokens 12 --retry-failed 2>r2.log ||
  { cat r2.log >&2; fail "the retry failed"; }
[[ -L out-link.jsonl ]] || fail "--retry-failed turned the symlink into a plain file"
[[ $(stat -c %a real/out.jsonl) == 600 ]] || fail "mode $(stat -c %a real/out.jsonl), not 600"
[[ $(stat -c %u:%g real/out.jsonl) == "$owner" ]] || fail "owner $(stat -c %u:%g real/out.jsonl), not $owner"
every_id_once rows.jsonl real/out.jsonl
grep -q '"ok":false' real/out.jsonl && fail "stale failures kept in the target"
echo "extract output checks passed"
