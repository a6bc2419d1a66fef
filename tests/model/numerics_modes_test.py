#!/usr/bin/env python3
"""The two named numerics modes of issue #32, gated by tools/numerics_vs_peer.py on the test
models (200 positions: 100 chunked prefill, 100 decode; float64 over the same q4_0 weights).

- int8x2 (the default) must be float-class: KL(ref || int8x2) mean within 2x + 1e-6 of what
  --activations f32 adds in the same run (the f16 KV cache and float32 sums), and below 1e-4
  (the full-size E2B measures 9.6e-6 against f32's 8.7e-6); argmax agreement >= 0.99 and
  centred cosine min >= 0.9999.
- int8 (the fast mode) must stay in llama.cpp's class: KL mean <= 3.5e-2, the top of what
  llama.cpp d8a24cc measures on the full-size E2B against the same reference (3.4-3.5e-2,
  docs/numerics.md), and no worse than twice the figure recorded here for each fixed
  model and id sequence (a regression guard: the figures vary ~25x between random models).
Each gate is printed with its figure; the f32 path is printed, not gated here (q4_numerics_test
checks it exactly)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ["RINGLM_SOURCE_DIR"], "tools"))
import numerics_vs_peer  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_numerics_modes")
os.makedirs(TMP, exist_ok=True)

# (preset, seed): int8 KL mean recorded on x86-64 AVX-512 (issue #32); the gate is 2x.
RECORDED_INT8_KL = {("tiny", 1): 5.4e-3, ("tiny-gqa", 2): 5.7e-4}
INT8_CLASS_KL = 3.5e-2


def main():
    failures = []

    def gate(label, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {label}: {detail}")
        if not ok:
            failures.append(label)

    for (preset, seed), recorded in RECORDED_INT8_KL.items():
        model = os.path.join(TMP, f"{preset}-s{seed}")
        subprocess.run([RINGLM, "make-test-model", model, "--preset", preset, "--seed", str(seed)], check=True,
                       capture_output=True)
        meta, rows = numerics_vs_peer.measure(model, model, positions=200, seed=seed, ringlm=RINGLM)
        numerics_vs_peer.print_table(meta, rows)
        by = {r["path"].split()[-1]: r for r in rows}
        x2, i8, f32 = by["int8x2"], by["int8"], by["f32"]
        bound = 2 * f32["kl_mean"] + 1e-6
        gate(f"{preset} s{seed} int8x2 float-class", x2["kl_mean"] <= min(bound, 1e-4) and x2["argmax"] >= 0.99
             and x2["cosine_centred_min"] >= 0.9999,
             f"KL {x2['kl_mean']:.3g} (<= {min(bound, 1e-4):.3g}), argmax {x2['argmax']:.3f} (>= 0.99), "
             f"cos min {x2['cosine_centred_min']:.6f} (>= 0.9999)")
        gate(f"{preset} s{seed} int8 llama.cpp-class", i8["kl_mean"] <= min(INT8_CLASS_KL, 2 * recorded),
             f"KL {i8['kl_mean']:.3g} (<= {min(INT8_CLASS_KL, 2 * recorded):.3g}: class {INT8_CLASS_KL}, "
             f"2x recorded {recorded:.3g}), argmax {i8['argmax']:.3f}")
        # The two modes must be told apart, or the gates above prove nothing about which ran.
        gate(f"{preset} s{seed} modes distinct", i8["kl_mean"] > 30 * x2["kl_mean"],
             f"int8 / int8x2 KL ratio {i8['kl_mean'] / max(x2['kl_mean'], 1e-30):.0f} (> 30)")
    if failures:
        raise SystemExit(f"FAILED: {failures}")


if __name__ == "__main__":
    main()
