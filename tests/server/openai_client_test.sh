#!/usr/bin/env bash
# Runs tests/js/openai_client_test.mjs, openai_responses_test.mjs and openai_embeddings_test.mjs (the official `openai` npm client) against
# `ringlm serve` on a free loopback port, then checks that SIGTERM stops it cleanly (exit 0).
#
# By default the server runs the deterministic fake backend. To run the same checks against a
# real model:  RINGLM_SERVE_ARGS="--model DIR --slots 2" RINGLM_TEST_MODE=real bash this-file
set -euo pipefail

: "${RINGLM:?path of the ringlm binary}"
: "${RINGLM_SOURCE_DIR:?}"
tmp="${RINGLM_TMP:-$(mktemp -d)}"
mkdir -p "$tmp"
js_dir="$RINGLM_SOURCE_DIR/tests/js"
if [[ ! -d "$js_dir/node_modules/openai" ]]; then
  echo "openai npm package missing: run (cd tests/js && npm ci)" >&2
  exit 1
fi

serve_args="${RINGLM_SERVE_ARGS:---fake-backend --slots 2 --queue 16}"
mode="${RINGLM_TEST_MODE:-fake}"
log="$tmp/serve.log"
: >"$log"  # truncate now: the redirection below happens in the background child
# shellcheck disable=SC2086
"$RINGLM" serve $serve_args --host 127.0.0.1 --port 0 2>"$log" &
pid=$!
trap 'kill -9 $pid 2>/dev/null || true' EXIT

port=""
for _ in $(seq 1 300); do  # up to 30 s (a real model takes a moment to load)
  port=$(sed -n 's/.* on http:\/\/127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$log" | head -n1)
  [[ -n "$port" ]] && break
  kill -0 $pid 2>/dev/null || { echo "server exited early:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.1
done
[[ -n "$port" ]] || { echo "server did not report its port:" >&2; cat "$log" >&2; exit 1; }

status=0
RINGLM_BASE_URL="http://127.0.0.1:$port/v1" RINGLM_TEST_MODE="$mode" timeout 300 node "$js_dir/openai_client_test.mjs" || status=$?
RINGLM_BASE_URL="http://127.0.0.1:$port/v1" RINGLM_TEST_MODE="$mode" timeout 300 node "$js_dir/openai_responses_test.mjs" || status=$?
RINGLM_BASE_URL="http://127.0.0.1:$port/v1" timeout 300 node "$js_dir/openai_embeddings_test.mjs" || status=$?

kill -TERM $pid
timeout 20 tail --pid=$pid -f /dev/null || { echo "server did not stop after SIGTERM" >&2; cat "$log" >&2; exit 1; }
rc=0
wait $pid || rc=$?
trap - EXIT
if [[ $rc -ne 0 ]]; then
  echo "server exited with $rc after SIGTERM:" >&2
  cat "$log" >&2
  exit 1
fi
grep -q "stopped" "$log" || { echo "no clean stop in the server log" >&2; cat "$log" >&2; exit 1; }
exit $status
