#!/usr/bin/env bash
# Bad audio gets one clear error line naming the file, never a crash: a WAV whose header
# declares 10 hours (refused from the header, before any sample buffer exists), a clip over
# the 30 s limit, truncated WAV and FLAC files, an unknown sample format, a NaN float
# sample, a zero channel count, a sample rate of 8 Hz, an empty file, a non-audio file, a
# clip too short for one feature frame. A checkpoint without an audio tower says so, in
# `encode` and in `inspect`.
set -euo pipefail
mkdir -p "$RINGLM_TMP" && cd "$RINGLM_TMP"
PY=${RINGLM_PYTHON:-python3}
"$RINGLM" make-test-model m --preset tiny --seed 2 >/dev/null 2>&1
"$RINGLM" make-test-model noaudio --preset tiny --seed 2 --no-audio >/dev/null 2>&1

sox -n -r 16000 -b 16 ok.wav synth 1.0 sine 440
sox ok.wav ok.flac
sox -n -r 16000 -b 16 long.wav synth 31 sine 440
sox -n -r 16000 -b 16 tiny.wav synth 0.005 sine 440
head -c $(($(stat -c %s ok.wav) / 2)) ok.wav > cut.wav
head -c $(($(stat -c %s ok.flac) / 2)) ok.flac > cut.flac
: > empty.wav
echo "just some text" > notes.wav
"$PY" - <<'PYEOF'
import struct
def wav(name, fmt_tag, channels, rate, bits, data, declared=None):
    block = channels * bits // 8
    fmt = struct.pack("<HHIIHH", fmt_tag, channels, rate, rate * block, block, bits)
    size = len(data) if declared is None else declared
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", size) + data
    open(name, "wb").write(b"RIFF" + struct.pack("<I", 4 + len(body)) + body)
# 10 hours of 16 kHz 16-bit mono declared, 1000 bytes present.
wav("tenhours.wav", 1, 1, 16000, 16, b"\0" * 1000, declared=10 * 3600 * 16000 * 2)
wav("format.wav", 0x1234, 1, 16000, 16, b"\0" * 3200)          # an unknown format tag
wav("nan.wav", 3, 1, 16000, 32, struct.pack("<f", 0.5) * 400 + struct.pack("<f", float("nan")) + b"\0" * 800)
wav("rate.wav", 1, 1, 8, 16, b"\0" * 3200)                      # 8 Hz
wav("nochannels.wav", 1, 0, 16000, 16, b"\0" * 3200)
PYEOF

expect_error() {  # file, pattern
  if "$RINGLM" encode --model m --audio "$1" --out e.f32 2> err.txt > /dev/null; then
    echo "FAIL: $1 was accepted"; exit 1
  fi
  if [[ $(wc -l < err.txt) -ne 1 ]] || ! grep -q "$1" err.txt || ! grep -qiE "$2" err.txt; then
    echo "FAIL: $1: unexpected error text:"; cat err.txt; exit 1
  fi
  echo "ok: $(cat err.txt)"
}
expect_error tenhours.wav "the WAV header declares 10:00:00 of audio; the limit is 30.00 s per clip"
expect_error long.wav "declares 31.00 s of audio; the limit is 30.00 s"
expect_error cut.wav "truncated WAV file: the data chunk declares 32000 bytes but the file ends after"
expect_error cut.flac "truncated|corrupt"
expect_error format.wav "not a readable WAV, FLAC, OGG or MP3 file"
expect_error nan.wav "non-finite sample \(nan\) at frame 400"
expect_error rate.wav "sample rate of 8 Hz"
expect_error nochannels.wav "0 channels"
expect_error empty.wav "empty audio file"
expect_error notes.wav "not a readable WAV, FLAC, OGG or MP3 file"
expect_error missing.wav "no such audio file"
expect_error tiny.wav "audio is too short \(80 samples at 16000 Hz\)"

"$RINGLM" encode --model m --audio ok.wav --out e.f32 > /dev/null 2>&1
"$RINGLM" encode --model m --audio ok.flac --out e.f32 > /dev/null 2>&1
if "$RINGLM" encode --model noaudio --audio ok.wav --out e.f32 2> err.txt; then exit 1; fi
grep -q "this checkpoint has no audio tower" err.txt
if "$RINGLM" encode --model m --audio ok.wav --image x.png --out e.f32 2> err.txt; then exit 1; fi
grep -q "give exactly one of --image FILE or --audio FILE" err.txt
"$RINGLM" inspect noaudio > noaudio.txt
grep -q "audio tower: none (config.json has no audio_config: this checkpoint takes no audio)" noaudio.txt
"$RINGLM" inspect m > m.txt
grep -q "audio tower: Conformer hidden 32, 2 layers, 4 heads, subsampling channels 128/8" m.txt
grep -q "embed_audio.embedding_projection.weight" m.txt
echo "bad audio ok"
