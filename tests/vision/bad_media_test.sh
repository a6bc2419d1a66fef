#!/usr/bin/env bash
# Bad images get one clear error line naming the file, never a crash: truncated and corrupt
# JPEG/PNG/WebP, a decompression bomb (a tiny file whose header claims 30000x30000
# pixels: refused from the header, before any pixel buffer exists), a 100,000-pixel-wide
# image, an empty file, a non-image, an unknown budget. A text-only checkpoint says it has
# no vision tower, in `encode` and in `inspect`.
set -euo pipefail
mkdir -p "$RINGLM_TMP" && cd "$RINGLM_TMP"
PY=${RINGLM_PYTHON:-python3}
"$RINGLM" make-test-model m --preset tiny --seed 2 >/dev/null 2>&1
"$RINGLM" make-test-model text --preset tiny --seed 2 --no-vision >/dev/null 2>&1

convert -size 64x48 gradient:red-blue -depth 8 ok.png
convert -seed 1 -size 200x150 plasma: -quality 90 ok.jpg
convert -seed 1 -size 200x150 plasma: ok.webp
head -c 300 ok.png > cut.png
head -c $(($(stat -c %s ok.jpg) / 2)) ok.jpg > cut.jpg
head -c $(($(stat -c %s ok.webp) / 2)) ok.webp > cut.webp
: > empty.png
echo "just some text" > notes.png
# A PNG whose IHDR says 30000x30000 (0.9 gigapixels) followed by a few bytes of nothing.
"$PY" - <<'PYEOF'
import struct, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
ihdr = struct.pack(">IIBBBBB", 30000, 30000, 8, 2, 0, 0, 0)
open("bomb.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)))
# Flip bytes in the middle of a valid PNG's compressed data (its CRC no longer matches).
data = bytearray(open("ok.png", "rb").read())
for i in range(120, 160):
    data[i] ^= 0x5A
open("corrupt.png", "wb").write(bytes(data))
# A 9x9 PNG whose next chunk claims 1.38 GB of tEXt data (libpng allocated that much before
# reading it; a fuzz finding): refused from the chunk header.
open("lengthbomb.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 9, 9, 8, 3, 0, 0, 0)) +
                                   struct.pack(">I", 0x52494646) + b"tEXtdaeD" + b"\0" * 16)
# A valid 100000x1 red PNG (ImageMagick's policy refuses to make one).
row = b"\0" + b"\xff\x00\x00" * 100000
ihdr = struct.pack(">IIBBBBB", 100000, 1, 8, 2, 0, 0, 0)
open("wide.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(row)) + chunk(b"IEND", b""))
PYEOF

expect_error() {  # file, pattern
  if "$RINGLM" encode --model m --image "$1" --out e.f32 2> err.txt > /dev/null; then
    echo "FAIL: $1 was accepted"; exit 1
  fi
  if [[ $(wc -l < err.txt) -ne 1 ]] || ! grep -q "$1" err.txt || ! grep -qiE "$2" err.txt; then
    echo "FAIL: $1: unexpected error text:"; cat err.txt; exit 1
  fi
  echo "ok: $(cat err.txt)"
}
expect_error cut.png "corrupt or truncated PNG"
expect_error cut.jpg "truncated JPEG|corrupt or truncated JPEG"
expect_error cut.webp "corrupt or truncated WebP"
expect_error corrupt.png "corrupt or truncated PNG"
expect_error lengthbomb.png "chunk 'tEXt' at byte offset 33 declares 1380533830 bytes of data but the file has 16 left"
expect_error bomb.png "30000x30000 = 900000000 pixels; the limit is 89478485"
expect_error wide.png "100000x1 pixels; the limit is 32768 per side"
expect_error empty.png "not a JPEG, PNG or WebP image \(empty file\)"
expect_error notes.png "not a JPEG, PNG or WebP image"
expect_error missing.png "no such image file"

for f in ok.png ok.jpg ok.webp; do "$RINGLM" encode --model m --image $f --out e.f32 > /dev/null 2>&1; done
if "$RINGLM" encode --model m --image ok.png --out e.f32 --image-tokens 100 2> err.txt; then exit 1; fi
grep -q "budget 100 is not one of 70, 140, 280, 560, 1120" err.txt

if "$RINGLM" encode --model text --image ok.png --out e.f32 2> err.txt; then exit 1; fi
grep -q "this checkpoint has no vision tower" err.txt
"$RINGLM" inspect text > text.txt
grep -q "vision tower: none (config.json has no vision_config: this checkpoint is text only)" text.txt
"$RINGLM" inspect m > m.txt
grep -q "vision tower: hidden 32, 2 layers, 4 heads (2 KV) of 16" m.txt
grep -q "embed_vision.embedding_projection.weight" m.txt
echo "bad media ok"
