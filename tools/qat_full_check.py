#!/usr/bin/env python3
"""The lattice-exact q4_0 import (docs/quantization.md) on a FULL-SIZE QAT-like checkpoint:
what tests/model/qat_import_test.py checks on the tiny preset, at E2B size, with no float64
copy of the model (reference_forward.py reads the float32 matrices lazily). Not a CI test:
tens of minutes and ~20 GB of disk on E2B.

    ringlm make-test-model DIR --preset e2b --qat --no-vision --no-audio --seed 3
    tools/qat_full_check.py --hf DIR --out PACKED_DIR [--positions 64] [--ringlm build/ringlm]

Prints: convert's share of blocks recovered exactly (and its wall time, the packed size),
the converted directory's load time, `ringlm logits --weights q4_0 --activations f32
--kv-type f32` on the checkpoint (load-time quantization) against float64 over the true
lattice weights (argmax, min cosine: the issue's gate is 100 % / 0.99999), the converted
directory against the same, and beside them the naive ggml rule (numpy restatement, fp16 d =
signed extremum / -8) on the same matrices: its share of exact blocks, and float64 over its
weights against float64 over the true ones (argmax, mean KL). Exit status 1 when the
load-time gate or 100 % exact recovery fails."""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "model"))
import logits_cli  # noqa: E402
import q4_argmax_check  # noqa: E402
import reference_forward as ref  # noqa: E402
from q4_numerics_test import q4_0_dequant  # noqa: E402


def kl_mean(p_logits, q_logits):
    def log_softmax(z):
        z = z - z.max(-1, keepdims=True)
        return z - np.log(np.exp(z).sum(-1, keepdims=True))
    lp, lq = log_softmax(p_logits), log_softmax(q_logits)
    return float((np.exp(lp) * (lp - lq)).sum(-1).mean())


def naive_exact_blocks(W, names, chunk=8192):
    """Blocks the naive ggml rule keeps exactly, over the matrices q4_0 quantizes."""
    exact = total = 0
    for name in names:
        t = dict.__getitem__(W, name)
        for r in range(0, t.shape[0], chunk):
            w = t.rows(np.arange(r, min(r + chunk, t.shape[0])))
            same = (q4_0_dequant(w).reshape(w.shape[0], -1, 32) == w.reshape(w.shape[0], -1, 32)).all(-1)
            exact += int(same.sum())
            total += same.size
    return exact, total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hf", required=True, help="a `make-test-model --qat` checkpoint directory")
    ap.add_argument("--out", required=True, help="where `ringlm convert` writes the packed directory")
    ap.add_argument("--positions", type=int, default=64)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--ringlm", default=os.environ.get("RINGLM", os.path.join(HERE, "..", "build", "ringlm")))
    a = ap.parse_args()
    fails = []

    t0 = time.time()
    r = subprocess.run([a.ringlm, "convert", "--model", a.hf, "--out", a.out], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"ringlm convert failed: {r.stderr[-2000:]}")
    wall = time.time() - t0
    print(r.stdout.strip())
    m = re.search(r"q4_0 blocks: (\d+); on an int4 lattice (\d+) .*recovered exactly \(codes and scale\) (\d+) "
                  r"\(([\d.]+) %\).*?(\d+) rows need a power-of-two factor \(row factors: (\d+) bytes\)", r.stdout, re.S)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(a.out) for f in fs)
    print(f"convert: {wall:.1f} s wall, packed directory {size / 1e9:.3f} GB")
    if not m or int(m.group(3)) != int(m.group(1)):
        fails.append("100 % of blocks recovered exactly")
    for label, model, flags in (("converted directory", a.out, []), ("checkpoint, --weights q4_0", a.hf, ["--weights", "q4_0"])):
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([a.ringlm, "logits", "--model", model, "--ids", "2", "--out", os.path.join(tmp, "x.bin"),
                                *flags], capture_output=True, text=True)
        lt = re.search(r"load ([\d.]+) s", r.stderr)
        print(f"load time, {label}: {lt.group(1) + ' s' if lt else 'not reported: ' + r.stderr[-300:]}")

    c, stored = ref.load_checkpoint(a.hf)
    rng = np.random.default_rng(a.seed)
    ids = [2] + [int(i) for i in rng.integers(0, c["vocab_size"], size=a.positions - 1)]
    decode_from = a.positions * 3 // 4
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        true_logits = ref.forward((c, stored), ids)
        print(f"float64 forward over the true lattice weights: {time.time() - t0:.0f} s ({a.positions} positions)")
        for label, model, flags in (("load-time q4_0 of the checkpoint", a.hf, ["--weights", "q4_0"]),
                                    ("converted directory", a.out, [])):
            t0 = time.time()
            got = logits_cli.run_logits(a.ringlm, tmp, model, ids, decode_from, *flags, "--activations", "f32",
                                        "--kv-type", "f32")
            cos, agree = logits_cli.cosine_and_argmax(got, true_logits)
            print(f"{label}, f32 activations, f32 KV, vs float64 over the lattice weights: "
                  f"argmax {agree.mean():.4f}, min cosine {cos.min():.8f}, mean KL {kl_mean(true_logits, got):.3e} "
                  f"({time.time() - t0:.0f} s with load)")
            if model == a.hf and not (agree.all() and cos.min() >= 0.99999):
                fails.append(f"{label}: argmax 100 % and cosine >= 0.99999")
        # The naive rule: every linear layer and the LM head through ggml's q4_0 (numpy).
        cn, naive = q4_argmax_check.quantized_checkpoint(a.hf)
        exact, total = naive_exact_blocks(naive, sorted(naive.quantized))
        naive_logits = ref.forward((cn, naive), ids)
        cos, agree = logits_cli.cosine_and_argmax(naive_logits, true_logits)
        print(f"naive ggml rule: {exact} of {total} blocks exact ({100.0 * exact / total:.1f} %); float64 over its "
              f"weights vs the true lattice: argmax {agree.mean():.4f}, mean cosine {cos.mean():.6f}, "
              f"mean KL {kl_mean(true_logits, naive_logits):.3e}")
    if fails:
        print(f"FAILED: {fails}")
        sys.exit(1)


if __name__ == "__main__":
    main()
