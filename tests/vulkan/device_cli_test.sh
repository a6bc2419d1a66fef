#!/usr/bin/env bash
# `--device vulkan` end to end on the tiny model (lavapipe in CI): `ringlm devices` and
# `--version` report the backend; greedy `run` (plain and guided by a JSON Schema) gives the
# same text as the CPU path with float32 activations (the guided run's subset LM head on the
# device), and the guided reply is valid JSON for the schema; a bad --device value is an error naming it, not a crash. Passes without running
# anything on a build whose machine has no Vulkan device (says so).
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
"$RINGLM" --version | grep -q 'Vulkan backend: compiled in'
devices=$("$RINGLM" devices)
echo "$devices"
if ! grep -q '^vulkan:0 ' <<<"$devices"; then
  echo "SKIP: no Vulkan device on this machine"
  exit 0
fi
[[ -f model/config.json ]] || "$RINGLM" make-test-model model --preset tiny --seed 3 2>/dev/null

cpu=$("$RINGLM" run -m model --activations f32 -n 40 -p "hello there" 2>/dev/null)
gpu=$("$RINGLM" run -m model --device vulkan -n 40 -p "hello there" 2>/dev/null)
[[ -n $cpu && $cpu == "$gpu" ]] || { echo "plain run differs: cpu [$cpu] vulkan [$gpu]" >&2; exit 1; }

schema="$RINGLM_SOURCE_DIR/examples/ticket.schema.json"
prompt="Classify: my order never arrived"
cpu=$(echo "$prompt" | "$RINGLM" run -m model --activations f32 --json-schema "$schema" -n 600 2>/dev/null)
gpu=$(echo "$prompt" | "$RINGLM" run -m model --device vulkan --json-schema "$schema" -n 600 --stats 2>stats.txt)
[[ $cpu == "$gpu" ]] || { echo "guided run differs: cpu [$cpu] vulkan [$gpu]" >&2; exit 1; }
# The guided steps with a small allowed set ran the subset LM head on the device.
grep -Eq 'guided steps, [1-9][0-9]* on the subset LM head' stats.txt || { echo "no subset-head steps:" >&2; cat stats.txt >&2; exit 1; }
"$RINGLM_PYTHON" - "$schema" "$gpu" <<'PY'
import json, sys, jsonschema
jsonschema.validate(json.loads(sys.argv[2]), json.load(open(sys.argv[1])))
PY

expect_error() {  # expect_error REGEX ARGS...: exit status 1 and the message on stderr
  local re=$1 status=0
  shift
  "$RINGLM" "$@" 2>err.txt >/dev/null || status=$?
  [[ $status == 1 ]] && grep -Eq "$re" err.txt || { echo "ringlm $*: status $status, stderr:" >&2; cat err.txt >&2; exit 1; }
}
expect_error 'device vulkan:99: there are [0-9]+ Vulkan devices' run -m model --device vulkan:99 -p hi
expect_error 'device gpu: expected cpu, vulkan or vulkan:N' run -m model --device gpu -p hi
expect_error 'vulkan:x: expected vulkan:N' run -m model --device vulkan:x -p hi
echo "device_cli_test: ok"
