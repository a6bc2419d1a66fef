#!/usr/bin/env bash
# llama.cpp's spellings (#30 item 1): -t/--threads (not temperature), -c/--ctx-size,
# -n/--n-predict, --temp, -np/--parallel on serve, -ngl accepted and explained, -m on every
# command that reads a model, `tokenize -f -`/`--input -`/`--jsonl -` from stdin; usage errors
# exit 2 with a "did you mean"; --help shows every default one way, "(default: X)".
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
[[ -f model/config.json ]] ||
  "$RINGLM" make-test-model model --preset demo --seed 3 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
fail() { echo "FAIL: $*" >&2; exit 1; }

# The llama.cpp spellings give the same reply as ringlm's own.
want=$("$RINGLM" run --model model --threads 2 --ctx 256 --max-tokens 6 --temperature 0 -p "Hello there" 2>/dev/null)
got=$("$RINGLM" run -m model -t 2 -c 256 -n 6 --temp 0 -p "Hello there" 2>/dev/null)
got2=$("$RINGLM" run -m model --threads 2 --ctx-size 256 --n-predict 6 -p "Hello there" 2>/dev/null)
[[ -n "$want" && "$want" == "$got" && "$want" == "$got2" ]] || fail "llama.cpp spellings differ: '$want' '$got' '$got2'"
# Sampled: --temp is the temperature (a different reply from greedy with some seed).
s1=$("$RINGLM" run -m model --temp 1 --seed 3 -n 8 -p "Hello there" 2>/dev/null)
s2=$("$RINGLM" run -m model --temperature 1 --seed 3 -n 8 -p "Hello there" 2>/dev/null)
[[ "$s1" == "$s2" ]] || fail "--temp and --temperature differ"

# -t is --threads: `-t 0.7` (a temperature to an old ringlm) is a usage error that says so.
rc=0; "$RINGLM" run -m model -t 0.7 -p hi 2>t.log >/dev/null || rc=$?
[[ $rc == 2 ]] || fail "-t 0.7 exited $rc, not 2"
grep -q -- "-t is --threads" t.log && grep -q -- "--temp" t.log || { cat t.log >&2; fail "-t 0.7 does not explain"; }

# -ngl: accepted, and the note says the GPU is not used.
"$RINGLM" run -m model -ngl 99 -n 2 -p hi >/dev/null 2>ngl.log || { cat ngl.log >&2; fail "-ngl 99 refused"; }
grep -q "ngl/--n-gpu-layers 99 ignored: ringlm does not offload by layers" ngl.log || { cat ngl.log >&2; fail "no -ngl note"; }
"$RINGLM" run -m model -ngl 0 -n 2 -p hi >/dev/null 2>ngl0.log
! grep -q "n-gpu-layers" ngl0.log || fail "a note for -ngl 0"

# serve -np N: N slots (the banner says so); also --parallel.
"$RINGLM" serve --fake-backend --host 127.0.0.1 --port 0 -np 3 2>serve.log &
pid=$!
for _ in $(seq 1 100); do grep -q " slots" serve.log && break; sleep 0.1; done
kill $pid; wait $pid || true
grep -q "(3 slots" serve.log || { cat serve.log >&2; fail "serve -np 3 does not give 3 slots"; }
rc=0; "$RINGLM" serve --fake-backend --parallel 0 2>np.log || rc=$?
[[ $rc == 2 ]] || fail "serve --parallel 0 exited $rc"

# -m on every command that reads a model.
"$RINGLM" tokenize -m model --text "Hello world" >tok.txt
"$RINGLM" detokenize -m model --ids "$(tr -d '[]' <tok.txt)" >detok.txt
[[ $(cat detok.txt) == "Hello world" ]] || fail "tokenize/detokenize -m: '$(cat detok.txt)'"
echo '{"messages":[{"role":"user","content":"hi"}]}' >m.json
"$RINGLM" template -m model --messages m.json >tpl.json
grep -q '"ids"' tpl.json || fail "template -m"
for cmd in run chat serve extract bench logits tokenize detokenize template encode bench-grammar; do
  "$RINGLM" "$cmd" --help >h.txt
  grep -Eq -- "-m,--model" h.txt || fail "$cmd has no -m"
done

# tokenize reads standard input with -f - / --input - / --jsonl -.
a=$(echo -n "Hello world" | "$RINGLM" tokenize -m model -f -)
b=$(echo -n "Hello world" | "$RINGLM" tokenize -m model --input -)
c=$(echo '{"text": "Hello world"}' | "$RINGLM" tokenize -m model --jsonl -)
[[ "$a" == "$(cat tok.txt)" && "$b" == "$a" && "$c" == "$a" ]] || fail "tokenize from stdin: '$a' '$b' '$c'"

# Usage errors exit 2 (CLI11's own codes were 100+), with a suggestion for a near miss.
rc=0; "$RINGLM" run -m model --tmp 0.5 -p hi 2>u1.log >/dev/null || rc=$?
[[ $rc == 2 ]] && grep -q "did you mean --temp?" u1.log || { cat u1.log >&2; fail "--tmp: rc $rc"; }
rc=0; "$RINGLM" run -m model --ctx-siz 64 -p hi 2>u2.log >/dev/null || rc=$?
[[ $rc == 2 ]] && grep -q "did you mean --ctx-size?" u2.log || { cat u2.log >&2; fail "--ctx-siz: rc $rc"; }
rc=0; "$RINGLM" tokenise --text hi 2>u3.log >/dev/null || rc=$?
[[ $rc == 2 ]] && grep -q "did you mean tokenize?" u3.log || { cat u3.log >&2; fail "tokenise: rc $rc"; }
rc=0; "$RINGLM" run -m model -n abc -p hi 2>u4.log >/dev/null || rc=$?
[[ $rc == 2 ]] || fail "-n abc exited $rc"
rc=0; "$RINGLM" --help >/dev/null || rc=$?
[[ $rc == 0 ]] || fail "--help exited $rc"

# --help: one form for defaults, "(default: X)" at the end of the description; never CLI11's
# "TYPE=X" after the flag, never "(default X)".
for cmd in $("$RINGLM" --help | sed -n '/^SUBCOMMANDS:/,$p' | awk 'NR>1 && $1 ~ /^[a-z]/ {print $1}'); do
  "$RINGLM" "$cmd" --help >h.txt
  if grep -En '^ +-.*[A-Z]+=[^ ]' h.txt; then fail "$cmd --help shows a default as TYPE=X"; fi
  if grep -Eni '\(default[ ,)]' h.txt; then fail "$cmd --help writes a default another way"; fi
done
"$RINGLM" run --help >h.txt
grep -Eq -- "--max-tokens.*\(default: 256\)" h.txt || fail "run --help: --max-tokens default"
grep -Eq -- "--top-p.*\(default: 1\)" h.txt || fail "run --help: --top-p default"
grep -Eq -- "--ctx.*\(default: 8192\)" h.txt || fail "run --help: --ctx default"
echo "CLI convention checks passed"
