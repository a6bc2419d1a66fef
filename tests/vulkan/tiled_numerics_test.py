#!/usr/bin/env python3
"""The tiled q4_0 matmul on the Vulkan device (shaders/matmul_tiled.glsl, docs/backends.md)
against the float64 reference over the same q4_0 weights (tests/model/q4_numerics_test.py's
numpy quantization): the tiny model's logits over a 160-token prefill (chunks of 64, 64
and 32 rows: tiled) and 24 decode steps (one row: the row shader), with --device vulkan
--weights q4_0 --activations f32
1. tiled (the default, RINGLM_VULKAN_TILED_MIN_ROWS=8) and the row shader alone (=0): both
   as close to float64 as the CPU's exact q4_0 path must be (cosine >= 0.99999, argmax
   equal except near-ties), and to each other;
2. binary16 tiles (RINGLM_VULKAN_FP16=1; the float32 tiles where the device lacks
   shaderFloat16): cosine >= 0.9999 and argmax equal except near-ties (the documented bound);
3. a bad RINGLM_VULKAN_TILED_MIN_ROWS is an error naming the variable.
Passes, saying so, where the machine has no Vulkan device."""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "model"))
import logits_cli  # noqa: E402
import q4_numerics_test as q4  # noqa: E402
import reference_forward as ref  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_tiled_numerics")
os.makedirs(TMP, exist_ok=True)
failures = []


def run(model, ids, decode_from, **env):
    for k in ("RINGLM_VULKAN_TILED_MIN_ROWS", "RINGLM_VULKAN_FP16"):
        os.environ.pop(k, None)
    os.environ.update(env)
    return logits_cli.run_logits(RINGLM, TMP, model, ids, decode_from, "--device", "vulkan", "--weights", "q4_0",
                                 "--activations", "f32")


def check(label, got, want, min_cos):
    diff = float(np.abs(got - want).max())
    cos, agree = logits_cli.cosine_and_argmax(got, want)
    top2 = np.sort(want, axis=-1)[:, -2:]
    near_tie = ~agree & (top2[:, 1] - top2[:, 0] < 10 * diff)
    hard = int((~agree & ~near_tie).sum())
    ok = hard == 0 and cos.min() >= min_cos and np.isfinite(got).all()
    print(f"{'ok  ' if ok else 'FAIL'} {label}: max_abs_diff={diff:.3e} min_cos={cos.min():.8f} "
          f"argmax_mismatch={hard} near_ties={int(near_tie.sum())}")
    if not ok:
        failures.append(label)


def main():
    devices = subprocess.run([RINGLM, "devices"], check=True, capture_output=True, text=True).stdout
    if not any(line.startswith("vulkan:0 ") for line in devices.splitlines()):
        print("SKIP: no Vulkan device on this machine")
        return
    model = os.path.join(TMP, "tiny-s3")
    subprocess.run([RINGLM, "make-test-model", model, "--preset", "tiny", "--seed", "3"], check=True,
                   capture_output=True)
    ckpt, _ = q4.quantized_checkpoint(model)
    ids = [2] + list(np.random.default_rng(3).integers(0, ckpt[0]["vocab_size"], size=160 + 24 - 1))
    want = ref.forward(ckpt, ids)
    tiled = run(model, ids, 160)
    rows = run(model, ids, 160, RINGLM_VULKAN_TILED_MIN_ROWS="0")
    fp16 = run(model, ids, 160, RINGLM_VULKAN_FP16="1")
    check("tiled vs float64", tiled, want, 0.99999)
    check("row shader vs float64", rows, want, 0.99999)
    check("tiled vs row shader", tiled, rows, 0.99999)
    if not (tiled[:160] != rows[:160]).any():
        print("FAIL the prefill rows are the row shader's bits: did the tiled matmul run?")
        failures.append("tiled ran")
    check("binary16 tiles vs float64", fp16, want, 0.9999)

    os.environ["RINGLM_VULKAN_TILED_MIN_ROWS"] = "eight"
    r = subprocess.run([RINGLM, "logits", "--model", model, "--ids", "2,3", "--device", "vulkan", "--out",
                        os.path.join(TMP, "bad.bin")], capture_output=True, text=True)
    ok = r.returncode != 0 and "RINGLM_VULKAN_TILED_MIN_ROWS" in r.stderr
    print(f"{'ok  ' if ok else 'FAIL'} a bad RINGLM_VULKAN_TILED_MIN_ROWS: exit {r.returncode}: {r.stderr.strip()}")
    if not ok:
        failures.append("bad env")
    if failures:
        raise SystemExit(f"FAILED: {failures}")


if __name__ == "__main__":
    main()
