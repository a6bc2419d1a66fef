#!/usr/bin/env bash
# `ringlm serve` end to end with curl: SIGTERM lets an in-flight stream finish ([DONE]) and the
# process exit 0; a second server on a port in use fails with a clear error.
set -euo pipefail
: "${RINGLM:?}"
tmp="${RINGLM_TMP:-$(mktemp -d)}"
mkdir -p "$tmp"

# Fresh logs first: the redirection below happens in the background child, and a log left by
# an earlier run must not be read in the meantime.
rm -f "$tmp"/*.log "$tmp/stream.txt"
: >"$tmp/serve.log"
# 5 ms per token and ~80-token replies: a stream lasts about 0.4 s. A grace of 60 s: the
# stream must finish, not be cancelled, however slowly a loaded host runs it (stop returns
# as soon as it has).
"$RINGLM" serve --fake-backend --fake-token-delay-us 5000 --slots 1 --port 0 --shutdown-grace-ms 60000 2>"$tmp/serve.log" &
pid=$!
trap 'kill -9 $pid 2>/dev/null || true' EXIT
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's/.* on http:\/\/127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$tmp/serve.log" | head -n1)
  [[ -n "$port" ]] && break
  sleep 0.1
done
[[ -n "$port" ]] || { cat "$tmp/serve.log" >&2; exit 1; }
url="http://127.0.0.1:$port"

# A port already in use is a one-line error, exit 1.
if timeout 10 "$RINGLM" serve --fake-backend --port "$port" 2>"$tmp/second.log"; then
  echo "second server on a busy port did not fail" >&2; exit 1
fi
grep -q "ringlm: error: serve: cannot listen on 127.0.0.1:$port" "$tmp/second.log" || { cat "$tmp/second.log" >&2; exit 1; }

curl -sN "$url/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"user","content":"hello"}],"stream":true}' >"$tmp/stream.txt" &
curl_pid=$!
# Wait until the stream is running (up to 30 s), then ask the server to stop.
for _ in $(seq 1 1500); do grep -q '"content"' "$tmp/stream.txt" 2>/dev/null && break; sleep 0.02; done
kill -TERM $pid
# Up to 30 s each (they end as soon as the stream and the server do): a loaded CI host.
timeout 30 tail --pid=$curl_pid -f /dev/null || { echo "stream did not end" >&2; exit 1; }
wait $curl_pid || true
timeout 30 tail --pid=$pid -f /dev/null || { echo "server did not stop after SIGTERM" >&2; cat "$tmp/serve.log" >&2; exit 1; }
rc=0
wait $pid || rc=$?
trap - EXIT
[[ $rc -eq 0 ]] || { echo "server exit code $rc" >&2; cat "$tmp/serve.log" >&2; exit 1; }
tail -n 2 "$tmp/stream.txt" | grep -q '^data: \[DONE\]$' || { echo "stream did not finish:" >&2; tail -n 5 "$tmp/stream.txt" >&2; exit 1; }
grep -q '"finish_reason":"stop"' "$tmp/stream.txt" || { echo "no finish_reason stop" >&2; exit 1; }
grep -q "SIGTERM received" "$tmp/serve.log"
grep -q "stopped" "$tmp/serve.log"
echo "ok: in-flight stream finished after SIGTERM, exit 0"
