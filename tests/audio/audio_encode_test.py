#!/usr/bin/env python3
"""`ringlm encode --audio` against the float64 numpy reference (audio_reference.py) on the
tiny audio tower of make-test-model, over clips made here with espeak-ng, sox and
python3-soundfile: speech, tones, mono and stereo, 8/16/24-bit and float WAV, FLAC, OGG
Vorbis, MP3, a 44.1 kHz clip that is resampled, a clip of a single soft token and one of the
full 30 s (750 tokens).

Checks: the decoded waveform equals what python3-soundfile decodes (1 ulp for MP3), a
resampled one agrees with sox's resampler; the log-mel features equal the reference
extractor's valid frames to float tolerance (it pads to 128 samples and masks as
transformers does); the token count follows the processor's rule; every soft token has
cosine >= 0.99999 with the reference (and a small relative error)."""
import json
import os
import subprocess
import sys

import numpy as np
import soundfile as sf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import audio_reference as ref  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_audio_test")
os.makedirs(TMP, exist_ok=True)
MODEL = os.path.join(TMP, "tiny")
subprocess.run([RINGLM, "make-test-model", MODEL, "--preset", "tiny", "--seed", "13"], check=True,
               capture_output=True)
tower = ref.load_tower(MODEL)
fe = ref.load_extractor(MODEL)


def path(name):
    return os.path.join(TMP, name)


def sox(*args):
    subprocess.run(["sox", *args], check=True, capture_output=True)


subprocess.run(["espeak-ng", "-w", path("speech22k.wav"), "Order A B one two three four never arrived, refund me"],
               check=True, capture_output=True)
sox(path("speech22k.wav"), "-r", "16000", "-b", "16", path("speech.wav"))
sox("-n", "-r", "16000", "-b", "16", path("tones.wav"), "synth", "1.3", "sine", "440", "sine", "1200", "gain", "-6")
sox("-n", "-r", "16000", "-b", "24", path("chirp24.wav"), "synth", "0.9", "sine", "200-6000", "gain", "-3")
sox("-n", "-r", "16000", "-e", "floating-point", "-b", "32", path("noise.wav"), "synth", "0.7", "pinknoise", "gain", "-9")
sox("-n", "-r", "16000", "-e", "unsigned", "-b", "8", path("square8.wav"), "synth", "0.6", "square", "330", "gain", "-12")
sox(path("speech.wav"), path("speech.flac"))
sox(path("speech.wav"), path("speech.ogg"))
sox("-n", "-r", "44100", "-c", "2", "-b", "16", path("stereo44k.wav"), "synth", "1.7", "sine", "500", "sine", "2500", "gain", "-3")
sox("-n", "-r", "16000", "-b", "16", path("blip.wav"), "synth", "0.05", "sine", "1000")
sox("-n", "-r", "16000", "-b", "16", path("full30.wav"), "synth", "30", "sine", "300-3000", "gain", "-6")
t = np.arange(16000) / 16000.0
sf.write(path("tone.mp3"), (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 16000, format="MP3")

# (file, whether python3-soundfile's decode is the extractor's input, tolerance of that check)
cases = [("speech.wav", True, 0), ("tones.wav", True, 0), ("chirp24.wav", True, 0), ("noise.wav", True, 0),
         ("square8.wav", True, 0), ("speech.flac", True, 0), ("speech.ogg", True, 1e-6), ("tone.mp3", True, 1e-6),
         ("stereo44k.wav", False, 0), ("blip.wav", True, 0), ("full30.wav", True, 0)]

worst = 1.0
for name, direct, tol in cases:
    out, feat_out, samp_out = path("emb.f32"), path("feat.f32"), path("samples.f32")
    r = subprocess.run([RINGLM, "encode", "--model", MODEL, "--audio", path(name), "--out", out, "--features-out",
                        feat_out, "--samples-out", samp_out, "--threads", "2"], capture_output=True, text=True)
    assert r.returncode == 0, (name, r.stderr)
    info = json.loads(r.stdout)
    got_wave = np.fromfile(samp_out, dtype=np.float32)
    y, sr = sf.read(path(name), dtype="float32", always_2d=True)
    y = y.mean(axis=1, dtype=np.float32) if y.shape[1] > 1 else y[:, 0]
    if direct:
        assert sr == 16000 and len(y) == len(got_wave), (name, sr, len(y), len(got_wave))
        diff = np.abs(got_wave - y).max()
        assert diff <= tol, f"{name}: decoded samples differ from soundfile's by {diff}"
    else:
        # Resampled with libsoxr (librosa's soxr_hq); sox's own `rate` effect is the same
        # algorithm at its default (high) quality, so the two agree closely.
        raw = path("sox.raw")
        sox(path(name), "-r", "16000", "-c", "1", "-e", "floating-point", "-b", "32", "-t", "raw", raw)
        want_wave = np.fromfile(raw, dtype=np.float32)
        assert len(want_wave) == len(got_wave), (name, len(want_wave), len(got_wave))
        diff = np.abs(got_wave - want_wave).max()
        assert diff < 1e-3, f"{name}: resampled waveform differs from sox's by {diff}"
    feats, mask = ref.log_mel(got_wave, fe)
    want_feat = feats[mask]
    got_feat = np.fromfile(feat_out, dtype=np.float32).reshape(-1, 128)
    assert got_feat.shape == want_feat.shape, (name, got_feat.shape, want_feat.shape)
    fdiff = np.abs(got_feat.astype(np.float64) - want_feat).max()
    assert fdiff < 1e-4, f"{name}: log-mel features differ from the reference by {fdiff}"
    # The processor's count: mel frames, then two stride-2 convolutions, capped at 750.
    frames = (len(got_wave) + 160 - 321) // 160 + 1
    tokens = min(((frames + 1) // 2 + 1) // 2, 750)
    assert info["tokens"] == tokens and info["frames"] == frames, (name, info, frames, tokens)
    if name == "full30.wav":
        assert tokens == 750
        want = ref.encode(tower, feats[:1200], mask[:1200])  # the first 300 tokens: 25 blocks
        got = np.fromfile(out, dtype=np.float32).astype(np.float64).reshape(tokens, -1)[:want.shape[0]]
    else:
        want = ref.encode(tower, feats, mask)
        got = np.fromfile(out, dtype=np.float32).astype(np.float64).reshape(want.shape)
    cos = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    rel = np.abs(got - want).max() / np.abs(want).max()
    worst = min(worst, cos.min())
    print(f"{name}: {info['format']} {info['channels']} ch {info['sample_rate']} Hz {info['seconds']:.2f} s -> "
          f"{frames} frames, {tokens} tokens; features max diff {fdiff:.1e}; min cosine {cos.min():.8f}, "
          f"max rel err {rel:.2e}")
    assert cos.min() >= 0.99999, f"{name}: soft token cosine {cos.min()}"
    assert rel < 1e-3, f"{name}: relative error {rel}"
print(f"audio encode matches the float64 reference on {len(cases)} clips (worst cosine {worst:.8f})")
