#!/usr/bin/env bash
# An installed ringlm starts with no other step (#30 item 3): `cmake --install` into a fresh
# prefix, then P/bin/ringlm run -p hi with a clean environment (no RINGLM_*, an empty HOME)
# writes the demo model to $XDG_CACHE_HOME/ringlm on first use from the tokenizer installed
# under P/share/ringlm, replies, and reuses it the second time; `serve` answers with its web
# page; the systemd unit is installed (not enabled) and names P/bin/ringlm.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf prefix home
cmake --install "$RINGLM_BUILD_DIR" --prefix "$RINGLM_TMP/prefix" >install.log
P="$RINGLM_TMP/prefix"
[[ -f $P/share/ringlm/gemma4-tokenizer/tokenizer.json ]] || fail "no tokenizer under share/ringlm"
[[ ! -e $P/bin/demo-model ]] || fail "a demo model next to the installed binary (it must come from the cache)"
mkdir home
clean=(env -i PATH=/usr/bin:/bin HOME="$RINGLM_TMP/home")

"${clean[@]}" "$P/bin/ringlm" run -p hi -n 4 >first.out 2>first.log || { cat first.log >&2; fail "first run"; }
demo=$(ls -d home/.cache/ringlm/demo-model-*)
[[ -f $demo/config.json ]] || fail "no demo model in the cache"
grep -q "writing the built-in demo model to $RINGLM_TMP/$demo" first.log || { cat first.log >&2; fail "first use not announced"; }
grep -q "using the built-in DEMO model" first.log || fail "no demo notice"
[[ -s first.out ]] || fail "no reply"
"${clean[@]}" "$P/bin/ringlm" run -p hi -n 4 >second.out 2>second.log
! grep -q "writing the built-in demo model" second.log || fail "the demo model was written twice"
cmp -s first.out second.out || fail "the second reply differs"
# The same demo model as the build tree's (scripts/setup.sh: demo preset, seed 1).
"$RINGLM" make-test-model ref --preset demo --seed 1 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
want=$("$RINGLM" run -m ref -p hi -n 4 2>/dev/null)
[[ "$want" == "$(cat first.out)" ]] || fail "the cached demo model is not setup.sh's"
# XDG_CACHE_HOME wins over HOME.
"${clean[@]}" XDG_CACHE_HOME="$RINGLM_TMP/home/xdg" "$P/bin/ringlm" tokenize --text hi >/dev/null 2>xdg.log
[[ -f $(ls -d home/xdg/ringlm/demo-model-*)/config.json ]] || { cat xdg.log >&2; fail "XDG_CACHE_HOME ignored"; }

# serve from the prefix: the web page and the API.
"${clean[@]}" "$P/bin/ringlm" serve --host 127.0.0.1 --port 0 2>serve.log &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's/.* on http:\/\/127\.0\.0\.1:\([0-9]*\) .*/\1/p' serve.log | head -n1)
  [[ -n "$port" ]] && break
  sleep 0.1
done
[[ -n "$port" ]] || { cat serve.log >&2; fail "serve did not start"; }
curl -sf "http://127.0.0.1:$port/" | grep -qi "<html" || fail "no web page at /"
curl -sf "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}' | grep -q '"choices"' || fail "no completion"
kill $pid; wait $pid 2>/dev/null || true
trap - EXIT

# The systemd unit: installed, not enabled, names this prefix's binary.
unit=$P/lib/systemd/system/ringlm.service
[[ -f $unit ]] || fail "no systemd unit"
grep -q "^ExecStart=$P/bin/ringlm serve " "$unit" || { cat "$unit" >&2; fail "ExecStart does not name $P/bin/ringlm"; }
[[ -z $(find "$P" -path '*wants*') ]] || fail "the unit is enabled"
if command -v systemd-analyze >/dev/null; then
  # (verify checks the ExecStart binary exists and the directives parse)
  systemd-analyze verify "$unit" >verify.log 2>&1 || { cat verify.log >&2; fail "systemd-analyze verify"; }
fi
echo "first-run checks passed"
