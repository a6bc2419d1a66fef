#!/usr/bin/env bash
# Issue #28, images under a budget, end to end on the demo-size model (random towers): a
# 14 KB PNG that decodes to 9459 x 9459 pixels (268 MB of RGB) is refused 413 at once under a
# small --media-memory-mb, and with room for one, a second at the same time gets 429 while the
# first decodes; 16 `detail: high` images get context_length_exceeded before any encoding;
# /metrics shows the media bytes; the server's peak RSS stays within the budget of its baseline.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
source "$(dirname "$0")/serve_lib.sh"
fail() { echo "FAIL: $*" >&2; cat "$serve_log" >&2; exit 1; }
model="$RINGLM_TMP/model"
[[ -f "$model/config.json" ]] ||
  "$RINGLM" make-test-model "$model" --preset demo --seed 5 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null

# The bomb and a small image, as JSON request bodies (a 1-bit grey PNG written by hand).
"$RINGLM_PYTHON" - "$RINGLM_TMP" <<'PY'
import base64, json, struct, sys, zlib
def png(w, h, fill):
    raw = (b"\0" + bytes([fill]) * ((w + 7) // 8)) * h
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 1, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
def body(img, n=1, detail="auto"):
    url = "data:image/png;base64," + base64.b64encode(img).decode()
    parts = [{"type": "image_url", "image_url": {"url": url, "detail": detail}} for _ in range(n)]
    return json.dumps({"max_tokens": 2, "messages": [{"role": "user", "content": parts + [{"type": "text", "text": "?"}]}]})
bomb = png(9459, 9459, 0xAA)
print("bomb PNG:", len(bomb), "bytes", file=sys.stderr)
open(sys.argv[1] + "/bomb.json", "w").write(body(bomb))
open(sys.argv[1] + "/sixteen.json", "w").write(body(png(512, 512, 0x55), 16, "high"))
open(sys.argv[1] + "/small.json", "w").write(body(png(64, 48, 0x0F)))
PY
post() { curl -s -o "$RINGLM_TMP/out.json" -w '%{http_code} %{time_total}\n' -H 'Content-Type: application/json' \
  --data-binary @"$1" "http://127.0.0.1:$port/v1/chat/completions"; }
hwm() { awk '/VmHWM/ {print $2}' "/proc/$serve_pid/status"; }

# A budget too small for the bomb: 413 from the header, nothing decoded.
start_serve --model "$model" --threads 2 --ctx 2048 --slots 2 --media-memory-mb 64 --max-body 2000000
base_kb=$(hwm)
read -r code secs <<<"$(post "$RINGLM_TMP/bomb.json")"
echo "bomb under --media-memory-mb 64: $code in $secs s"
[[ $code == 413 ]] || fail "bomb under a 64 MB budget: $code $(cat "$RINGLM_TMP/out.json")"
grep -q media_too_large "$RINGLM_TMP/out.json" || fail "413 without code media_too_large"
read -r code secs <<<"$(post "$RINGLM_TMP/sixteen.json")"
echo "16 x detail:high: $code in $secs s"
[[ $code == 400 ]] && grep -q context_length_exceeded "$RINGLM_TMP/out.json" || fail "16 high images: $code $(cat "$RINGLM_TMP/out.json")"
read -r code secs <<<"$(post "$RINGLM_TMP/small.json")"
[[ $code == 200 ]] || fail "a small image: $code $(cat "$RINGLM_TMP/out.json")"
grep -q '^ringlm_media_refused_total 1$' <<<"$(curl -s "http://127.0.0.1:$port/metrics")" || fail "refusal not in /metrics"
echo "peak RSS growth: $(( ($(hwm) - base_kb) / 1024 )) MB"
stop_serve

# Room for one bomb, one at a time: of three sent together one decodes, the others get 429.
start_serve --model "$model" --threads 2 --ctx 2048 --slots 2 --media-memory-mb 512 --media-concurrency 1 --max-body 2000000
base_kb=$(hwm)
posts=()
for i in 1 2 3; do post "$RINGLM_TMP/bomb.json" >"$RINGLM_TMP/bomb$i.code" & posts+=($!); done
seen=0
for _ in $(seq 1 100); do
  m=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^ringlm_media_bytes_in_use / {print $2}')
  [[ ${m:-0} != 0 ]] && { seen=$m; break; }
  sleep 0.05
done
wait "${posts[@]}"  # not the server
codes=$(cat "$RINGLM_TMP"/bomb?.code | awk '{print $1}' | sort | tr '\n' ' ')
echo "three bombs at once (--media-concurrency 1): $codes; media bytes seen in /metrics: $seen"
[[ $(grep -o 429 <<<"$codes" | wc -l) == 2 && $(grep -o 200 <<<"$codes" | wc -l) == 1 ]] || fail "expected one 200 and two 429s, got: $codes"
[[ $seen != 0 ]] || fail "/metrics never showed media bytes in use"
growth=$(( ($(hwm) - base_kb) / 1024 ))
echo "peak RSS growth with one bomb decoding: $growth MB (budget 512 MB)"
(( growth < 512 + 64 )) || fail "peak RSS grew by $growth MB"
stop_serve
echo ok
