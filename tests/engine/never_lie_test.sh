#!/usr/bin/env bash
# Never lie (#30 item 2): a guided `run` reply cut by --max-tokens or by the context is an
# error (exit 3, stderr names the limit), not a cut-off object with exit 0; a complete one
# exits 0; an unguided reply cut by a limit says so on stderr; `chat` says when a reply was cut.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
[[ -f model/config.json ]] ||
  "$RINGLM" make-test-model model --preset demo --seed 3 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
fail() { echo "FAIL: $*" >&2; exit 1; }

# The issue's case: no additionalProperties:false, so the model may keep adding keys.
cat >open.json <<'J'
{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}
J
cat >enum.json <<'J'
{"type":"string","enum":["yes","no"]}
J
rc=0; "$RINGLM" run -m model --json-schema open.json -n 8 -p "Describe a person" >cut.out 2>cut.log || rc=$?
[[ $rc == 3 ]] || { cat cut.log >&2; fail "a guided reply cut by --max-tokens exited $rc"; }
grep -q "error: the reply was cut by --max-tokens 8 before its JSON value was complete" cut.log || { cat cut.log >&2; fail "no limit named"; }
"$RINGLM_PYTHON" -c 'import json,sys; json.load(open("cut.out"))' 2>/dev/null && fail "the cut reply parses"

rc=0; "$RINGLM" run -m model --json-schema open.json --ctx 64 -n 500 -p "Describe a person" >ctx.out 2>ctx.log || rc=$?
[[ $rc == 3 ]] || { cat ctx.log >&2; fail "a guided reply cut by the context exited $rc"; }
grep -q "error: the reply was cut by the context (--ctx 64 tokens)" ctx.log || { cat ctx.log >&2; fail "context not named"; }

"$RINGLM" run -m model --json-schema enum.json -n 20 -p "Yes?" >ok.out 2>ok.log || { cat ok.log >&2; fail "a complete guided reply failed"; }
"$RINGLM_PYTHON" -c 'import json; assert json.load(open("ok.out")) in ("yes", "no")'
! grep -q "cut by" ok.log || fail "a complete reply reported as cut"

# Unguided: the reply is text, so exit 0, but stderr says it was cut.
"$RINGLM" run -m model -n 4 -p "Tell me a story" >plain.out 2>plain.log
grep -q "the reply was cut by --max-tokens 4" plain.log || { cat plain.log >&2; fail "unguided cut not reported"; }

# chat (standard input not a terminal): each cut reply is marked.
printf 'Tell me a story\n/exit\n' | "$RINGLM" chat -m model -n 4 >chat.out 2>chat.log
grep -q "\[cut by --max-tokens 4\]" chat.log || { cat chat.log >&2; fail "chat does not mark a cut reply"; }
printf 'Tell me a story\n/exit\n' | "$RINGLM" chat -m model --ctx 40 -n 500 >chat2.out 2>chat2.log
grep -q "\[cut: the context is full (--ctx 40 tokens)" chat2.log || { cat chat2.log >&2; fail "chat: context cut not marked"; }
echo "never-lie checks passed"
