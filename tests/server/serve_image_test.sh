#!/usr/bin/env bash
# Images and audio over HTTP: the `openai` npm client sends image_url content parts
# (tests/js/openai_image_test.mjs: base64 data: URLs in PNG, JPEG and WebP; local files under
# --allow-local-media; refusals) and input_audio parts (tests/js/openai_audio_test.mjs: WAV
# and FLAC, with an image, refusals) to `ringlm serve` on the demo-size model, whose tiny
# random towers encode them into the prompt.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
source "$(dirname "$0")/serve_lib.sh"
js_dir="$RINGLM_SOURCE_DIR/tests/js"
[[ -d "$js_dir/node_modules/openai" ]] || { echo "openai npm package missing: run (cd tests/js && npm ci)" >&2; exit 1; }
model="$RINGLM_TMP/model"
[[ -f "$model/config.json" ]] ||
  "$RINGLM" make-test-model "$model" --preset demo --seed 5 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
media="$RINGLM_TMP/media"
rm -rf "$media" && mkdir -p "$media/sub"
convert -seed 2 -size 96x64 plasma: -depth 8 "$media/a.png"
cp "$media/a.png" "$media/sub/a.png"
convert -size 80x80 gradient:red-blue -quality 85 "$media/a.jpg"
convert -size 64x96 gradient:green-yellow -define webp:lossless=true "$media/a.webp"
cp "$media/a.png" "$RINGLM_TMP/outside.png"
ln -sf "$RINGLM_TMP/outside.png" "$media/link.png"
espeak-ng -w "$media/speech22k.wav" "my order never arrived" 2>/dev/null
sox "$media/speech22k.wav" -r 16000 -b 16 "$media/speech.wav"
sox "$media/speech.wav" "$media/speech.flac"
# Low rate and 8-bit so that the 31 s and 20 s clips stay under --max-media-bytes.
sox -n -r 2000 -b 8 "$media/long.wav" synth 31 sine 300
sox -n -r 2000 -b 8 "$media/half.wav" synth 20 sine 300
max=200000

start_serve --model "$model" --threads 2 --ctx 2048 --slots 2 --allow-local-media "$media" --max-media-bytes "$max" \
  --max-body 2000000
status=0
RINGLM_BASE_URL="http://127.0.0.1:$port/v1" RINGLM_MEDIA_DIR="$media" RINGLM_OUTSIDE="$RINGLM_TMP/outside.png" \
  RINGLM_MAX_MEDIA_BYTES=$max timeout 300 node "$js_dir/openai_image_test.mjs" || status=$?
[[ $status -ne 0 ]] || RINGLM_BASE_URL="http://127.0.0.1:$port/v1" RINGLM_MEDIA_DIR="$media" RINGLM_MAX_MEDIA_BYTES=$max \
  timeout 300 node "$js_dir/openai_audio_test.mjs" || status=$?
# Without --allow-local-media every path is refused (a data: URL still works).
stop_serve
[[ $status -eq 0 ]] || { cat "$serve_log" >&2; exit $status; }
start_serve --model "$model" --threads 2 --ctx 2048
body='{"max_tokens":2,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"a.png"}}]}]}'
reply=$(curl -s -H "Content-Type: application/json" -d "$body" "http://127.0.0.1:$port/v1/chat/completions")
grep -q '"code":"local_media_disabled"' <<<"$reply" || { echo "FAIL: a path without --allow-local-media: $reply" >&2; exit 1; }
stop_serve
