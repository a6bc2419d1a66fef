#!/usr/bin/env bash
# `-hf ORG/NAME[:QUANT]` (alias --hf-repo, llama.cpp's convention) against the loopback Hub
# imitation (fake_hub.py): a GGUF repository's file picked by its tag (any case), Q4_K_M without
# one, the mmproj file brought along, only the chosen files downloaded, the cache used without
# asking the Hub the second time, a dropped download resumed, a safetensors repository fetched
# whole, errors that list the choices; -hf with -m is a usage error (exit 2) on every command
# that reads a model; `ringlm pull ORG/NAME:QUANT` fetches one quantization.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
fail() { echo "FAIL: $*" >&2; exit 1; }
hub_pid="" serve_pid=""
trap 'kill $hub_pid $serve_pid 2>/dev/null || true' EXIT
start_hub() {  # start_hub [fault flags]
  [[ -z "$hub_pid" ]] || { kill $hub_pid 2>/dev/null || true; wait $hub_pid 2>/dev/null || true; }
  rm -f port hub.log
  "$RINGLM_PYTHON" "$RINGLM_SOURCE_DIR/tests/install/fake_hub.py" hub port hub.log "$@" &
  hub_pid=$!
  for _ in $(seq 1 100); do [[ -f port ]] && break; sleep 0.1; done
  [[ -f port ]] || fail "the fake hub did not start"
  export HF_ENDPOINT="http://127.0.0.1:$(cat port)"
  touch hub.log
}
downloads() { grep -o '/resolve/[^ ]*' hub.log | sed 's|.*/||' | sort | tr '\n' ' '; }

# The repositories: acme/tiny (safetensors), acme/tiny-GGUF (three quantizations, two mmproj
# files), acme/two-GGUF (two quantizations, no Q4_K_M).
rm -rf hub hf* && mkdir -p hub/acme/tiny-GGUF hub/acme/two-GGUF
"$RINGLM" make-test-model hub/acme/tiny --preset tiny --seed 4 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
g=hub/acme/tiny-GGUF
for t in q4_0 q8_0 q4_k; do
  name=$(echo $t | tr a-z A-Z | sed 's/^Q4_K$/Q4_K_M/')
  "$RINGLM" convert -m hub/acme/tiny --out $g/tiny-$name.gguf --type $t >/dev/null 2>&1
done
"$RINGLM" convert -m hub/acme/tiny --mmproj-out $g/mmproj-tiny-F16.gguf >/dev/null 2>&1
"$RINGLM" convert -m hub/acme/tiny --mmproj-out $g/mmproj-tiny-Q8_0.gguf --tower-type q8_0 >/dev/null 2>&1
echo "# tiny GGUF" >$g/README.md
cp $g/tiny-Q4_0.gguf $g/tiny-Q8_0.gguf hub/acme/two-GGUF/
[[ $(ls $g | wc -l) == 6 ]] || fail "fixture: $(ls $g)"
start_hub
export HF_HOME="$RINGLM_TMP/hf1"
snap=hf1/hub/models--acme--tiny-GGUF/snapshots/0123456789abcdef0123456789abcdef01234567

# 1. A tag in any case picks that file; the F16 mmproj comes along; nothing else is fetched.
want=$("$RINGLM" run -m $g/tiny-Q8_0.gguf --mmproj $g/mmproj-tiny-F16.gguf -n 4 -p hi 2>/dev/null)
got=$("$RINGLM" run -hf acme/tiny-GGUF:q8_0 -n 4 -p hi 2>run1.log) || { cat run1.log >&2; fail "run -hf :q8_0"; }
[[ -n "$want" && "$got" == "$want" ]] || fail "run -hf acme/tiny-GGUF:q8_0 gave '$got', -m the file '$want'"
[[ $(downloads) == "mmproj-tiny-F16.gguf tiny-Q8_0.gguf " ]] || fail "downloaded: $(downloads)"
[[ $(ls $snap | tr '\n' ' ') == "mmproj-tiny-F16.gguf tiny-Q8_0.gguf " ]] || fail "snapshot holds: $(ls $snap)"
grep -q "sha256 verified" run1.log || { cat run1.log >&2; fail "no checksum line"; }

# 2. The second time the cache answers: no request at all (the Hub is stopped to be sure).
kill $hub_pid; wait $hub_pid 2>/dev/null || true; hub_pid=""
got=$("$RINGLM" run --hf-repo acme/tiny-GGUF:Q8_0 -n 4 -p hi 2>run2.log) || { cat run2.log >&2; fail "run from the cache"; }
[[ "$got" == "$want" ]] || fail "from the cache: '$got'"
grep -q "tiny-Q8_0.gguf (from the Hugging Face cache)" run2.log || { cat run2.log >&2; fail "no cache message"; }
# Offline and not cached: said by name, no network tried.
rc=0; HF_HUB_OFFLINE=1 "$RINGLM" run -hf acme/tiny-GGUF:Q4_0 -n 2 -p hi 2>off.log >/dev/null || rc=$?
[[ $rc == 1 ]] && grep -q "not in the Hugging Face cache .* HF_HUB_OFFLINE is set" off.log || { cat off.log >&2; fail "offline, rc $rc"; }

# 3. No tag: Q4_K_M. A dropped download resumes.
start_hub --drop tiny-Q4_K_M.gguf
want=$("$RINGLM" run -m $g/tiny-Q4_K_M.gguf -n 4 -p hi 2>/dev/null)
got=$("$RINGLM" run -hf acme/tiny-GGUF -n 4 -p hi 2>run3.log) || { cat run3.log >&2; fail "run -hf without a tag"; }
[[ "$got" == "$want" ]] || fail "no tag: '$got' vs Q4_K_M's '$want'"
grep -q "fetching tiny-Q4_K_M.gguf, mmproj-tiny-F16.gguf" run3.log || { cat run3.log >&2; fail "the default is not Q4_K_M"; }
grep -q "tiny-Q4_K_M.gguf: connection lost at" run3.log || { cat run3.log >&2; fail "no resume"; }
[[ $(downloads) == "tiny-Q4_K_M.gguf tiny-Q4_K_M.gguf " ]] || fail "downloaded: $(downloads)"

# 4. Errors list the choices: an unknown tag; no tag and no Q4_K_M; a tag on a safetensors repository.
rc=0; "$RINGLM" run -hf acme/tiny-GGUF:Q5_K_M -p hi 2>e1.log >/dev/null || rc=$?
[[ $rc == 1 ]] && grep -q "acme/tiny-GGUF:Q5_K_M: no .gguf file with that quantization; the repository has: tiny-Q4_0.gguf, tiny-Q4_K_M.gguf, tiny-Q8_0.gguf" e1.log ||
  { cat e1.log >&2; fail "unknown tag, rc $rc"; }
rc=0; "$RINGLM" run -hf acme/two-GGUF -p hi 2>e2.log >/dev/null || rc=$?
[[ $rc == 1 ]] && grep -q "2 .gguf files and none is Q4_K_M; pick one with acme/two-GGUF:QUANT: tiny-Q4_0.gguf, tiny-Q8_0.gguf" e2.log ||
  { cat e2.log >&2; fail "no default, rc $rc"; }
rc=0; "$RINGLM" run -hf acme/tiny:Q4_0 -p hi 2>e3.log >/dev/null || rc=$?
[[ $rc == 1 ]] && grep -q "acme/tiny has no .gguf files" e3.log || { cat e3.log >&2; fail "tag on safetensors, rc $rc"; }
rc=0; "$RINGLM" run -hf acme/nothing:Q4_0 -p hi 2>e4.log >/dev/null || rc=$?
[[ $rc == 1 ]] && grep -q "acme/nothing: no such repository" e4.log || { cat e4.log >&2; fail "missing repo, rc $rc"; }
rc=0; "$RINGLM" run -hf justaname -p hi 2>e5.log >/dev/null || rc=$?
[[ $rc != 0 ]] && grep -q "not a repository id" e5.log || { cat e5.log >&2; fail "bare name, rc $rc"; }

# 5. A safetensors repository is fetched whole, and tokenize/serve take -hf as run does.
want=$("$RINGLM" run -m hub/acme/tiny -n 4 -p hi 2>/dev/null)
got=$("$RINGLM" run -hf acme/tiny -n 4 -p hi 2>run5.log) || { cat run5.log >&2; fail "run -hf acme/tiny"; }
[[ "$got" == "$want" ]] || fail "safetensors repository: '$got' vs '$want'"
ids=$("$RINGLM" tokenize -hf acme/tiny-GGUF:Q8_0 --text "hello world" 2>/dev/null)
[[ -n "$ids" && "$ids" == "$("$RINGLM" tokenize -m $g/tiny-Q8_0.gguf --text "hello world" 2>/dev/null)" ]] || fail "tokenize -hf: $ids"
source "$RINGLM_SOURCE_DIR/tests/server/serve_lib.sh"
start_serve -hf acme/tiny-GGUF:Q8_0 --threads 1 --ctx 256
props=$(curl -sf "http://127.0.0.1:$port/props")
stop_serve
trap 'kill $hub_pid 2>/dev/null || true' EXIT  # serve_lib's traps replaced ours
grep -q "tiny-Q8_0.gguf (from the Hugging Face cache)" "$serve_log" || { cat "$serve_log" >&2; fail "serve -hf"; }
! grep -q "demo model" <<<"$props" || fail "serve -hf says it runs the demo model: $props"

# 6. -hf with -m is a usage error on every command that reads a model.
for cmd in run chat serve extract bench logits tokenize detokenize template encode bench-grammar convert; do
  rc=0; "$RINGLM" $cmd -hf acme/tiny -m hub/acme/tiny 2>both.log >/dev/null </dev/null || rc=$?
  [[ $rc == 2 ]] && grep -q "excludes" both.log || { cat both.log >&2; fail "$cmd -hf with -m exited $rc"; }
done

# 7. `ringlm pull ORG/NAME:QUANT`: that file (and the mmproj) only.
: >hub.log
HF_HOME="$RINGLM_TMP/hf2" "$RINGLM" pull acme/tiny-GGUF:Q4_0 >/dev/null 2>pull.log || { cat pull.log >&2; fail "pull :Q4_0"; }
[[ $(downloads) == "mmproj-tiny-F16.gguf tiny-Q4_0.gguf " ]] || fail "pull :Q4_0 downloaded: $(downloads)"
kill $hub_pid; wait $hub_pid 2>/dev/null || true  # it holds ctest's output pipe open
echo "-hf checks passed"
