#!/usr/bin/env bash
# The web page at / driven in headless Chromium (tests/js/web_ui_test.mjs) against `ringlm
# serve --api-key` on the built-in demo model (no --model: build/demo-model): the demo notice,
# favicon, a streamed chat reply, Markdown and raw HTML in a reply and a user message, an
# attached image in the request body, the conversation kept across a reload, a two-row
# extraction; and no notice on a second server that runs a --model.
# Screenshots land in $RINGLM_TMP/screenshots (RINGLM_SCREENSHOT_DIR overrides; docs/screenshots
# holds copies of them, see docs/server.md).
# Without Debian's chromium the test is skipped: exit 77, CTest's SKIP_RETURN_CODE (it shows
# as "Skipped", never as passed).
set -euo pipefail
mkdir -p "$RINGLM_TMP"
source "$(dirname "$0")/serve_lib.sh"
js_dir="$RINGLM_SOURCE_DIR/tests/js"
chromium="${RINGLM_CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$chromium" ]]; then
  echo "SKIP: $chromium missing: install Debian's chromium (./scripts/setup.sh does)"
  exit 77
fi
[[ -d "$js_dir/node_modules/puppeteer-core" ]] || { echo "puppeteer-core missing: run ./scripts/setup.sh" >&2; exit 1; }
model="$RINGLM_TMP/model"
[[ -f "$model/config.json" ]] ||
  "$RINGLM" make-test-model "$model" --preset tiny --seed 1 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
# A second server that runs a --model: the page must show no notice there.
start_serve -m "$model" --threads 1 --ctx 256
plain_port=$port plain_pid=$serve_pid
trap 'kill -9 $plain_pid 2>/dev/null || true' EXIT
convert -seed 3 -size 48x32 plasma: -depth 8 "$RINGLM_TMP/photo.png"
start_serve --threads 2 --ctx 2048 --api-key webkey
trap 'kill -9 $serve_pid $plain_pid 2>/dev/null || true' EXIT
RINGLM_BASE_URL="http://127.0.0.1:$port" RINGLM_API_KEY=webkey RINGLM_TEST_IMAGE="$RINGLM_TMP/photo.png" \
  RINGLM_NOTICE_URL="http://127.0.0.1:$plain_port" RINGLM_CHROMIUM="$chromium" \
  RINGLM_SCREENSHOT_DIR="${RINGLM_SCREENSHOT_DIR:-$RINGLM_TMP/screenshots}" timeout 240 node "$js_dir/web_ui_test.mjs" ||
  { echo "--- server log:" >&2; cat "$serve_log" >&2; exit 1; }
stop_serve
kill -TERM "$plain_pid"; wait "$plain_pid" || true
