# Sourced by the serve script tests (not a test itself): start_serve ARGS... starts
# `ringlm serve` on a free loopback port with its stderr in $serve_log, sets $serve_pid and
# $port, and stops it (SIGKILL) when the script exits; stop_serve stops it with SIGTERM and
# checks that it exits 0.
: "${RINGLM:?path of the ringlm binary}"

start_serve() {
  serve_log="$RINGLM_TMP/serve.$$.$RANDOM.log"
  : >"$serve_log"
  "$RINGLM" serve --host 127.0.0.1 --port 0 "$@" 2>"$serve_log" &
  serve_pid=$!
  trap 'kill -9 $serve_pid 2>/dev/null || true' EXIT
  port=""
  for _ in $(seq 1 300); do  # up to 30 s
    port=$(sed -n 's/.* on http:\/\/127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$serve_log" | head -n1)
    [[ -n "$port" ]] && return 0
    kill -0 "$serve_pid" 2>/dev/null || { echo "server exited early:" >&2; cat "$serve_log" >&2; exit 1; }
    sleep 0.1
  done
  echo "server did not report its port:" >&2
  cat "$serve_log" >&2
  exit 1
}

stop_serve() {
  kill -TERM "$serve_pid"
  local rc=0
  timeout 20 tail --pid="$serve_pid" -f /dev/null || { echo "server did not stop after SIGTERM" >&2; exit 1; }
  wait "$serve_pid" || rc=$?
  trap - EXIT
  [[ $rc -eq 0 ]] || { echo "server exited with $rc:" >&2; cat "$serve_log" >&2; exit 1; }
}
