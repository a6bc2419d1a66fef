#!/usr/bin/env python3
"""`ringlm encode` against the float64 numpy reference (vision_reference.py) on the tiny
vision tower of make-test-model, over images ImageMagick makes here: PNG (RGB, grey,
RGBA, palette), JPEG and WebP, sizes that shrink, grow, keep their size and hit the
processor's thin-image branch, at several soft-token budgets.

Checks: the resized-and-patched pixels equal the reference's exactly (both do PIL's
integer bicubic; ImageMagick decodes the file for the reference), the token count and
grid match the processor's rule, and every soft token has cosine >= 0.99999 with the
reference (and a small relative error)."""
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vision_reference as ref  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_vision_test")
os.makedirs(TMP, exist_ok=True)
MODEL = os.path.join(TMP, "tiny")
subprocess.run([RINGLM, "make-test-model", MODEL, "--preset", "tiny", "--seed", "11"], check=True,
               capture_output=True)
tower = ref.load_tower(MODEL)


def magick(*args):
    subprocess.run(["convert", *args], check=True, capture_output=True)


def pixels_of(path):
    """The file's 8-bit RGB pixels as ImageMagick decodes them (alpha dropped, grey replicated).
    A 16-bit file keeps the high byte of each sample, as PIL reads 16-bit RGB PNGs."""
    raw = os.path.join(TMP, "pixels.rgb")
    ident = subprocess.run(["identify", "-format", "%w %h %z ", path], check=True, capture_output=True, text=True).stdout
    w, h, depth = (int(v) for v in ident.split()[:3])
    magick("-define", "jpeg:dct-method=islow", path, "-alpha", "off", "-colorspace", "sRGB", "-type", "TrueColor",
           "-endian", "MSB", "-depth", "16" if depth == 16 else "8", "rgb:" + raw)
    if depth == 16:
        data = (np.fromfile(raw, dtype=">u2") >> 8).astype(np.uint8)
    else:
        data = np.fromfile(raw, dtype=np.uint8)
    assert data.size == w * h * 3, (path, data.size, w, h)
    return data.reshape(h, w, 3)


images = []
def make(name, *args, prefix="", depth="8"):
    path = os.path.join(TMP, name)
    magick(*args, "-depth", depth, prefix + path)
    images.append(path)

make("swirl.png", "-size", "640x480", "gradient:red-blue", "-swirl", "120", "-fill", "white", "-draw", "circle 320,240 350,300")
make("plasma.jpg", "-seed", "3", "-size", "123x457", "plasma:fractal", "-quality", "90")
make("tile.webp", "-size", "300x200", "pattern:checkerboard", "-fill", "yellow", "-draw", "rectangle 40,30 120,170")
make("grey.png", "-size", "50x50", "gradient:", "-colorspace", "Gray", "-type", "Grayscale")
make("alpha.png", "-size", "200x150", "xc:none", "-fill", "rgba(200,20,90,0.5)", "-draw", "circle 100,75 100,10",
     "-type", "TrueColorAlpha")
make("palette.png", "-size", "96x64", "gradient:green-orange", "-colors", "16", prefix="PNG8:")
make("thin.png", "-size", "10x2000", "gradient:white-black", "-rotate", "90")  # 2000x10: the thin-image branch
make("square.png", "-seed", "5", "-size", "336x336", "plasma:")
make("deep.png", "-seed", "6", "-size", "160x90", "plasma:", depth="16")  # 16-bit RGB: high bytes

worst = 1.0
cases = [(p, 280) for p in images] + [(images[0], 70), (images[1], 140), (images[6], 70), (images[0], 560)]
for path, budget in cases:
    out = os.path.join(TMP, "emb.f32")
    pix = os.path.join(TMP, "pix.f32")
    r = subprocess.run([RINGLM, "encode", "--model", MODEL, "--image", path, "--out", out, "--pixels-out", pix,
                        "--image-tokens", str(budget), "--threads", "2"], capture_output=True, text=True)
    assert r.returncode == 0, (path, r.stderr)
    info = json.loads(r.stdout)
    img = pixels_of(path)
    patches, pw, ph = ref.preprocess(img, 16, 3, budget)
    assert (info["patches_w"], info["patches_h"]) == (pw, ph), (path, info, pw, ph)
    assert info["tokens"] == pw * ph // 9 and info["tokens"] <= budget, (path, info)
    got_pix = np.fromfile(pix, dtype=np.float32).reshape(patches.shape)
    diff = np.abs(got_pix.astype(np.float64) - patches).max()
    assert diff == 0.0, f"{path} @{budget}: resized pixels differ from the reference by up to {diff * 255:.1f} levels"
    want = ref.encode(tower, patches, pw, ph)
    got = np.fromfile(out, dtype=np.float32).astype(np.float64).reshape(want.shape)
    cos = (got * want).sum(1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    rel = np.abs(got - want).max() / np.abs(want).max()
    worst = min(worst, cos.min())
    print(f"{os.path.basename(path)} @{budget}: {info['width']}x{info['height']} -> {pw * 16}x{ph * 16}, "
          f"{info['tokens']} tokens, min cosine {cos.min():.8f}, max rel err {rel:.2e}")
    assert cos.min() >= 0.99999, f"{path} @{budget}: soft token cosine {cos.min()}"
    assert rel < 1e-3, f"{path} @{budget}: relative error {rel}"
print(f"vision encode matches the float64 reference on {len(cases)} cases (worst cosine {worst:.8f})")
