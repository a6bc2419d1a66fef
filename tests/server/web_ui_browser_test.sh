#!/usr/bin/env bash
# The web page at / driven in headless Chromium (tests/js/web_ui_test.mjs) against `ringlm
# serve --api-key` on the demo-size model: chat with a streamed reply, an attached image,
# Markdown through the escaping renderer, the conversation kept across a reload, the favicon,
# a two-row extraction; and the stand-in notice against a second server (the fake backend).
# Screenshots land in $RINGLM_TMP (and in RINGLM_SCREENSHOT_DIR when set: docs/ holds them).
set -euo pipefail
mkdir -p "$RINGLM_TMP"
source "$(dirname "$0")/serve_lib.sh"
js_dir="$RINGLM_SOURCE_DIR/tests/js"
[[ -d "$js_dir/node_modules/puppeteer-core" ]] || { echo "puppeteer-core missing: run ./scripts/setup.sh" >&2; exit 1; }
[[ -x /usr/bin/chromium ]] || { echo "chromium missing: run ./scripts/setup.sh (Debian package chromium)" >&2; exit 1; }
model="$RINGLM_TMP/model"
[[ -f "$model/config.json" ]] ||
  "$RINGLM" make-test-model "$model" --preset demo --seed 1 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
# A second server, the fake backend, for the stand-in notice.
start_serve --fake-backend
fake_port=$port fake_pid=$serve_pid
trap 'kill -9 $fake_pid 2>/dev/null || true' EXIT
convert -seed 3 -size 48x32 plasma: -depth 8 "$RINGLM_TMP/photo.png"
start_serve -m "$model" --threads 2 --ctx 2048 --api-key webkey
trap 'kill -9 $serve_pid $fake_pid 2>/dev/null || true' EXIT
RINGLM_BASE_URL="http://127.0.0.1:$port" RINGLM_API_KEY=webkey RINGLM_TEST_IMAGE="$RINGLM_TMP/photo.png" \
  RINGLM_NOTICE_URL="http://127.0.0.1:$fake_port" \
  RINGLM_SCREENSHOT_DIR="${RINGLM_SCREENSHOT_DIR:-$RINGLM_TMP}" timeout 240 node "$js_dir/web_ui_test.mjs" ||
  { echo "--- server log:" >&2; cat "$serve_log" >&2; exit 1; }
stop_serve
kill -TERM "$fake_pid"; wait "$fake_pid" || true
