#!/usr/bin/env bash
# Issue #28: the API key without the command line (`ps` shows argv): --api-key-file FILE and
# RINGLM_API_KEY; the bearer scheme in any letter case. On the fake backend (no model).
set -euo pipefail
mkdir -p "$RINGLM_TMP"
source "$(dirname "$0")/serve_lib.sh"
fail() { echo "FAIL: $*" >&2; cat "$serve_log" >&2; exit 1; }
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

keyfile="$RINGLM_TMP/key"
printf 'from-file-key\n' >"$keyfile"
start_serve --fake-backend --api-key-file "$keyfile"
base="http://127.0.0.1:$port"
[[ $(code "$base/v1/models") == 401 ]] || fail "no key: not 401"
[[ $(code -H "Authorization: Bearer from-file-key" "$base/v1/models") == 200 ]] || fail "key from the file refused"
[[ $(code -H "Authorization: bearer from-file-key" "$base/v1/models") == 200 ]] || fail "lower-case scheme refused"
if ps -o args= -p "$serve_pid" | grep -q from-file-key; then fail "the key shows in ps"; fi
stop_serve

RINGLM_API_KEY=from-env-key start_serve --fake-backend
base="http://127.0.0.1:$port"
[[ $(code "$base/v1/models") == 401 ]] || fail "RINGLM_API_KEY: no key is not 401"
[[ $(code -H "Authorization: Bearer from-env-key" "$base/v1/models") == 200 ]] || fail "key from RINGLM_API_KEY refused"
stop_serve

# Both flags: refused at start; an empty key file too.
if "$RINGLM" serve --fake-backend --port 0 --api-key a --api-key-file "$keyfile" 2>"$RINGLM_TMP/both.err"; then
  echo "FAIL: --api-key with --api-key-file accepted" >&2; exit 1
fi
grep -q "not both" "$RINGLM_TMP/both.err" || { cat "$RINGLM_TMP/both.err" >&2; exit 1; }
: >"$RINGLM_TMP/empty"
if "$RINGLM" serve --fake-backend --port 0 --api-key-file "$RINGLM_TMP/empty" 2>"$RINGLM_TMP/empty.err"; then
  echo "FAIL: an empty key file accepted" >&2; exit 1
fi
grep -q "holds no key" "$RINGLM_TMP/empty.err" || { cat "$RINGLM_TMP/empty.err" >&2; exit 1; }
echo "ok"
