#!/usr/bin/env bash
# `ringlm chat` on a real terminal (tmux): Ctrl-C while the model writes stops the reply and
# returns to the prompt, the next turn still sees the earlier ones (the conversation saved
# with /save holds all turns), /help is not sent to the model, /reset asks first, and Ctrl-C
# twice at an empty prompt quits with status 0.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
command -v tmux >/dev/null || { echo "tmux missing: run ./scripts/setup.sh" >&2; exit 1; }
[[ -f model/config.json ]] ||
  "$RINGLM" make-test-model model --preset demo --seed 3 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
rm -f conv.json status
sock="$RINGLM_TMP/tmux.sock"
t() { tmux -S "$sock" "$@"; }
trap 't kill-server 2>/dev/null || true' EXIT
# A slow, long reply (many tokens, one thread) so that Ctrl-C lands mid-reply.
t new-session -d -s chat -x 160 -y 50 \
  "RINGLM_HISTORY=$RINGLM_TMP/history '$RINGLM' chat -m model --threads 1 -n 3000 --ctx 4096 --temperature 1 --seed 5 --stats; echo EXIT=\$? >status; sleep 30"
screen() { t capture-pane -p -t chat -S -5000; }
wait_for() {  # wait_for REGEX [seconds]
  for _ in $(seq 1 $((${2:-30} * 10))); do grep -Eq "$1" <<<"$(screen)" && return 0; sleep 0.1; done
  echo "timed out waiting for /$1/; screen:" >&2; screen >&2; exit 1
}
wait_count() {  # wait_count TEXT N: until TEXT shows on N lines
  for _ in $(seq 1 300); do [[ $(screen | grep -cF -- "$1") -ge $2 ]] && return 0; sleep 0.1; done
  echo "timed out waiting for $2 lines with '$1'; screen:" >&2; screen >&2; exit 1
}
# Until the reply to QUESTION has begun to stream (a line of text below it): a Ctrl-C sent on a
# fixed delay could land while a loaded host was still reading the line (CI runs tests two at a
# time), and at the prompt it means "Ctrl-C again or /exit", not "stop the reply".
wait_reply() {
  for _ in $(seq 1 300); do
    screen | sed -n "/^> $1\$/,\$p" | tail -n +2 | grep -q '[^[:space:]]' && return 0
    sleep 0.1
  done
  echo "timed out waiting for the reply to '$1'; screen:" >&2; screen >&2; exit 1
}
wait_for '/help lists the commands'

t send-keys -t chat '/help' Enter
wait_for '/save FILE'
t send-keys -t chat 'first question' Enter
wait_reply 'first question'  # streaming (3000 tokens take far longer than the rest of this)
sleep 0.5
t send-keys -t chat C-c
wait_count '[stopped]' 1
wait_count ' prompt tokens, ' 1
t send-keys -t chat 'second question' Enter
wait_reply 'second question'
sleep 0.5
t send-keys -t chat C-c
wait_count '[stopped]' 2
wait_count ' prompt tokens, ' 2
t send-keys -t chat "/save $RINGLM_TMP/conv.json" Enter
wait_for 'saved 4 messages'

# /reset asks; "n" keeps the conversation.
t send-keys -t chat '/reset' Enter
wait_for 'Start a new conversation\? \[y/N\]'
t send-keys -t chat 'n' Enter
wait_for 'kept the conversation'

# Up-arrow brings back the last line from the history (libedit), here "/reset".
t send-keys -t chat Up
wait_for '> /reset$'
t send-keys -t chat C-u

# Ctrl-C at an empty prompt explains, a second one quits.
t send-keys -t chat C-c
wait_for 'Ctrl-C again or /exit'
t send-keys -t chat C-c
for _ in $(seq 1 100); do [[ -f status ]] && break; sleep 0.1; done
[[ "$(cat status 2>/dev/null)" == "EXIT=0" ]] || { echo "chat did not exit 0: $(cat status 2>/dev/null)" >&2; screen >&2; exit 1; }

"$RINGLM_PYTHON" - <<'PY'
import json
msgs = json.load(open("conv.json"))["messages"]
roles = [m["role"] for m in msgs]
assert roles == ["user", "assistant", "user", "assistant"], roles
assert msgs[0]["content"] == "first question" and msgs[2]["content"] == "second question", msgs
assert all(m["content"] for m in msgs[1::2]), "a stopped reply kept no text"
print("conversation kept across Ctrl-C:", [len(m["content"]) for m in msgs])
PY
# The second turn's prompt holds the first turn, and its KV comes from the cache: the stopped
# reply is kept in the tokens the model produced (engine/token_respelling.h), though random-
# weight text rarely re-tokenizes the same way. Before that, this turn prefilled everything.
screen | "$RINGLM_PYTHON" -c '
import re, sys
turns = [tuple(map(int, m)) for m in re.findall(r"\[(\d+) prompt tokens, (\d+) reused from the cache, (\d+) generated", sys.stdin.read())]
assert len(turns) == 2, turns
(p1, _, g1), (p2, r2, _) = turns
assert p2 > p1 + g1 // 2, ("the second prompt does not contain the first turn", turns)
assert r2 >= p1 + g1 - 8, ("the second turn did not reuse the KV of the first turn", turns)
print("second prompt", p2, "tokens, reused", r2, ": first prompt", p1, "+ reply", g1, "+ new turn")
' || { screen >&2; exit 1; }
echo "chat tmux checks passed"
