# `ringlm tokenize` / `ringlm detokenize` end to end on the shared Gemma tokenizer.
set -euo pipefail
tok="$RINGLM_TOKENIZER_DIR"
mkdir -p "$RINGLM_TMP"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect NAME ACTUAL WANTED
  [[ "$2" == "$3" ]] || fail "$1: got [$2], want [$3]"
}

expect "plain" "$("$RINGLM" tokenize --model "$tok" --text 'Hello world')" "[9259,1902]"
expect "add-bos" "$("$RINGLM" tokenize --model "$tok" --text 'Hello world' --add-bos)" "[2,9259,1902]"
expect "specials matched" "$("$RINGLM" tokenize --model "$tok" --text '<|turn>user')" "[105,2364]"
no_special="$("$RINGLM" tokenize --model "$tok" --text '<|turn>user' --no-parse-special)"
[[ "$no_special" != \[105,* ]] || fail "--no-parse-special still gave <|turn>: $no_special"
expect "empty" "$("$RINGLM" tokenize --model "$tok" --text '')" "[]"

printf 'line one\n\tline two \xf0\x9f\xa6\x9c\n' > "$RINGLM_TMP/in.txt"
ids="$("$RINGLM" tokenize --model "$tok" --file "$RINGLM_TMP/in.txt")"
"$RINGLM" detokenize --model "$tok" --ids "$ids" > "$RINGLM_TMP/out.txt"
cmp "$RINGLM_TMP/in.txt" "$RINGLM_TMP/out.txt" || fail "file round trip differs"

expect "detokenize" "$("$RINGLM" detokenize --model "$tok" --ids 105,2364,107,2202,106)" "<|turn>user
hi<turn|>"
expect "skip special" "$("$RINGLM" detokenize --model "$tok" --ids '[2, 9259, 1902]' --skip-special)" "Hello world"

# Errors: one line on stderr, exit status 1, no crash.
if "$RINGLM" tokenize --model "$RINGLM_TMP/nowhere" --text x 2> "$RINGLM_TMP/err.txt"; then fail "missing model accepted"; fi
grep -q "ringlm: error: .*nowhere: no such file" "$RINGLM_TMP/err.txt" || fail "unclear error: $(cat "$RINGLM_TMP/err.txt")"
set +e
"$RINGLM" detokenize --model "$tok" --ids 1,x 2> "$RINGLM_TMP/err.txt"; rc=$?
set -e
[[ $rc == 1 ]] || fail "bad id list: exit $rc"
grep -q "'x' is not a token id" "$RINGLM_TMP/err.txt" || fail "unclear error: $(cat "$RINGLM_TMP/err.txt")"
set +e
"$RINGLM" detokenize --model "$tok" --ids 999999 2> "$RINGLM_TMP/err.txt"; rc=$?
set -e
[[ $rc == 1 ]] || fail "out-of-range id: exit $rc"
echo "cli ok"
