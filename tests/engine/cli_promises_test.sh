#!/usr/bin/env bash
# Small CLI promises: `run -f -` and a piped stdin, the warning when --ctx cuts
# --max-tokens, defaults and an example in every --help, and a suggestion for a mistyped
# flag or command.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
[[ -f model/config.json ]] ||
  "$RINGLM" make-test-model model --preset demo --seed 3 --tokenizer "$RINGLM_SHARED_DIR/gemma4-tokenizer" 2>/dev/null
fail() { echo "FAIL: $*" >&2; exit 1; }

# The same prompt three ways gives the same greedy reply.
a=$("$RINGLM" run -m model -p "Hello there" -n 8 2>/dev/null)
b=$(echo -n "Hello there" | "$RINGLM" run -m model -f - -n 8 2>/dev/null)
c=$(echo -n "Hello there" | "$RINGLM" run -m model -n 8 2>/dev/null)
[[ -n "$a" && "$a" == "$b" && "$a" == "$c" ]] || fail "run -p / -f - / piped stdin differ: '$a' '$b' '$c'"

# --ctx smaller than prompt + --max-tokens: warned once, on stderr.
"$RINGLM" run -m model -p "Hello there" -n 500 --ctx 64 >/dev/null 2>ctx.log
grep -q "warning: the context (--ctx 64 tokens) leaves room for" ctx.log || { cat ctx.log >&2; fail "no --ctx warning"; }
"$RINGLM" run -m model -p "Hello there" -n 8 --ctx 64 >/dev/null 2>ctx2.log
! grep -q "warning: the context" ctx2.log || fail "a warning although the reply fits"

# --help: defaults and one example per command.
for cmd in $("$RINGLM" --help | sed -n '/^SUBCOMMANDS:/,$p' | awk 'NR>1 && $1 ~ /^[a-z]/ {print $1}'); do
  "$RINGLM" "$cmd" --help >help.txt
  grep -q "^Example:" help.txt || fail "$cmd --help has no example"
done
"$RINGLM" run --help >help.txt
grep -Eq -- "--max-tokens.*256" help.txt || fail "run --help does not show the 256 default of --max-tokens"
grep -Eq -- "--temperature.*0" help.txt || fail "run --help does not show the temperature default"

# A mistyped flag or command gets a suggestion (and still fails).
rc=0; "$RINGLM" run --tempreature 0.5 -p hi 2>typo.log || rc=$?
[[ $rc != 0 ]] || fail "a mistyped flag succeeded"
grep -q "did you mean --temperature?" typo.log || { cat typo.log >&2; fail "no suggestion for --tempreature"; }
rc=0; "$RINGLM" extrct --input x 2>typo2.log >/dev/null || rc=$?
grep -q "did you mean extract?" typo2.log || { cat typo2.log >&2; fail "no suggestion for extrct"; }
echo "CLI promise checks passed"

# --model as a Hugging Face repo id, found in the local HF cache (the hub layout: refs/main
# names the snapshot, whose files are symlinks into blobs/); `ringlm models` lists it.
hub="$RINGLM_TMP/hf/hub"
rm -rf "$RINGLM_TMP/hf"
repo="$hub/models--acme--tiny-gemma"
mkdir -p "$repo/refs" "$repo/blobs" "$repo/snapshots/0123abc" "$repo/snapshots/old"
echo -n 0123abc >"$repo/refs/main"
for f in model/*; do
  cp "$f" "$repo/blobs/$(basename "$f").blob"
  ln -s "../../blobs/$(basename "$f").blob" "$repo/snapshots/0123abc/$(basename "$f")"
done
want=$("$RINGLM" tokenize --model model --text "Hello world")
got=$(HF_HOME="$RINGLM_TMP/hf" "$RINGLM" tokenize --model acme/tiny-gemma --text "Hello world")
[[ "$want" == "$got" ]] || fail "--model acme/tiny-gemma from the HF cache: '$got' vs '$want'"
rc=0; HF_HOME="$RINGLM_TMP/hf" "$RINGLM" tokenize --model acme/missing --text x 2>missing.log || rc=$?
[[ $rc == 1 ]] && grep -q "not in the Hugging Face cache" missing.log || { cat missing.log >&2; fail "a missing repo id"; }
HF_HOME="$RINGLM_TMP/hf" "$RINGLM" models --models-dir "$RINGLM_TMP" >models.txt
grep -Eq '^acme/tiny-gemma +hf-cache .*snapshots/0123abc' models.txt || { cat models.txt >&2; fail "models does not list the HF repo"; }
grep -Eq "$RINGLM_TMP/model +dir " models.txt || { cat models.txt >&2; fail "models does not list --models-dir"; }
echo "HF cache checks passed"

# Progress of long jobs: a line per stage when stderr is not a terminal, a bar when it is.
rm -rf prog prog-packed
"$RINGLM" make-test-model prog --preset demo --seed 2 --shards 2 --tokenizer "$RINGLM_SHARED_DIR/gemma4-tokenizer" 2>mk.log
[[ $(grep -Ec '^ringlm: make-test-model: model-0000[12]-of-00002\.safetensors: [0-9.]+ MB in [0-9.]+ s$' mk.log) == 2 ]] ||
  { cat mk.log >&2; fail "make-test-model does not report each shard"; }
"$RINGLM" convert --model prog --out prog-packed >/dev/null 2>conv.log
for stage in gemma4_qat_gather_raw/embed_per_layer.i8 gemma4_qat_gather_raw/embed_tokens.i8 weights.rlpk; do
  grep -Eq "^ringlm: convert: $stage: .* in [0-9.]+ s$" conv.log || { cat conv.log >&2; fail "convert does not report $stage"; }
done
rm -rf prog
script -qec "'$RINGLM' make-test-model prog --preset demo --seed 2 --tokenizer '$RINGLM_SHARED_DIR/gemma4-tokenizer'" /dev/null >tty.log
grep -q $'\r' tty.log && grep -Eq 'model\.safetensors \[#+ *\] 100%' tty.log || { cat -A tty.log | head >&2; fail "no progress bar on a terminal"; }
echo "progress checks passed"
