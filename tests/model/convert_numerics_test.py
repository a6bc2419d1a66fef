#!/usr/bin/env python3
"""`ringlm convert` end to end on a tiny checkpoint, checked by independent numpy code:

1. The converted files hold what the format says: packed_reader.py (numpy, from
   docs/convert.md) dequantizes every q4p16 matrix, and each equals numpy's own ggml q4_0
   quantization of the checkpoint's matrix (bit for bit); the sidecar's int8 codes and row
   scales equal numpy's symmetric per-row int8 (scale = maxabs/127 in float32, codes
   round-half-even of x * (1/scale)); proj.f32 / proj_norm.f32 are the checkpoint's values.
2. The engine's logits on the converted directory against reference_forward.py (float64)
   fed by packed_reader.py, over 1,600 prefill + 32 decode positions:
   --weights stored (float path over the dequantized weights): cosine >= 0.99999, argmax
   identical except near-ties; --weights q4_0 (default, int8x2 activations): the issue's
   gate, mean cosine >= 0.999 and argmax agreement >= 0.99. The w4a8 int8 mode is printed.
"""
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import packed_reader  # noqa: E402
import logits_cli  # noqa: E402
import reference_forward as ref  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_convert_numerics")
os.makedirs(TMP, exist_ok=True)
failures = []


def q4_0_dequant(w):
    """ggml q4_0 of each row (float32 steps), dequantized: an independent restatement."""
    rows, cols = w.shape
    x = w.astype(np.float32).reshape(rows, cols // 32, 32)
    idx = np.abs(x).argmax(axis=-1)
    m = np.take_along_axis(x, idx[..., None], axis=-1)
    d = (m / np.float32(-8)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    codes = np.minimum(15, np.trunc((x * inv).astype(np.float32) + np.float32(8.5))).astype(np.int32)
    d16 = d.astype(np.float16).astype(np.float32)
    return (d16 * (codes - 8).astype(np.float32)).reshape(rows, cols).astype(np.float64)


def i8_rows(w):
    x = w.astype(np.float32)
    scale = (np.abs(x).max(axis=1) / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(scale != 0, np.float32(1) / scale, np.float32(0)).astype(np.float32)
    q = np.clip(np.rint((x * inv[:, None]).astype(np.float32)), -127, 127).astype(np.int8)
    return q, scale


def check(label, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {label} {detail}")
    if not ok:
        failures.append(label)


def check_files(hf, out):
    c, stored = ref.load_checkpoint(hf)

    def full(name):
        t = dict.__getitem__(stored, name)
        return t.full()

    text, W = packed_reader.load_packed(out)
    n_q4 = n_f32 = bad = 0
    index, _ = packed_reader.read_index(os.path.join(out, "weights.rlpk"))
    for t in index["tensors"]:
        name = t["name"]
        if t["layout"] == "row_factors":  # folded into its matrix by packed_reader (all 1 here)
            continue
        src_name = "embed_tokens.weight" if name == "lm_head.weight" else name
        want = full(src_name)
        if t["dtype"] == "Q4_0":
            want = q4_0_dequant(want.reshape(t["shape"]))
            n_q4 += 1
        else:
            n_f32 += len(t["shape"]) == 2
        if not np.array_equal(W[name], want.reshape(W[name].shape)):
            bad += 1
            check(f"packed tensor {name}", False, f"max diff {np.abs(W[name] - want.reshape(W[name].shape)).max()}")
    check("every packed tensor equals numpy's quantization of the checkpoint", bad == 0,
          f"({n_q4} q4p16, {n_f32} f32 matrices, {len(index['tensors'])} tensors)")

    side = os.path.join(out, "gemma4_qat_gather_raw")
    meta = json.load(open(os.path.join(side, "meta.json")))
    L, ld = meta["L"], meta["ld"]
    for stem, name, rows, cols in (("embed_tokens", "embed_tokens.weight", meta["V"], meta["D"]),
                                   ("embed_per_layer", "embed_tokens_per_layer.weight", meta["V_pl"], L * ld)):
        _, codes, scale = packed_reader.read_i8_table(side, stem, rows, cols)
        q, s = i8_rows(full(name))
        check(f"sidecar {stem}: codes and scales equal numpy's per-row int8",
              np.array_equal(codes, q) and np.array_equal(scale, s),
              f"(code mismatches {int((codes != q).sum())}, scale mismatches {int((scale != s).sum())})")
    proj = np.fromfile(os.path.join(side, "proj.f32"), dtype="<f4").reshape(L * ld, meta["D"])
    check("sidecar proj.f32 = per_layer_model_projection", np.array_equal(proj, full("per_layer_model_projection.weight")))
    norm = np.fromfile(os.path.join(side, "proj_norm.f32"), dtype="<f4")
    check("sidecar proj_norm.f32 = per_layer_projection_norm",
          np.array_equal(norm, full("per_layer_projection_norm.weight")))
    check("meta.json fields", meta["V"] == c["vocab_size"] and meta["D"] == c["hidden_size"] and
          meta["PLD"] == L * ld and meta["embed_scale_pl"] == np.sqrt(ld), json.dumps(meta))
    return text, W


def run_cpp(model, ids, decode_from, *flags):
    return logits_cli.run_logits(RINGLM, TMP, model, ids, decode_from, *flags)


stats = logits_cli.cosine_and_argmax


def main():
    for preset, seed in (("tiny", 5), ("tiny-gqa", 6)):
        hf = os.path.join(TMP, f"{preset}-hf")
        out = os.path.join(TMP, f"{preset}-packed")
        subprocess.run([RINGLM, "make-test-model", hf, "--preset", preset, "--seed", str(seed)], check=True,
                       capture_output=True)
        r = subprocess.run([RINGLM, "convert", "--model", hf, "--out", out], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"ringlm convert failed: {r.stderr}")
        print(r.stdout.strip())
        ckpt = check_files(hf, out)

        rng = np.random.default_rng(seed)
        ids = [2] + list(rng.integers(0, ckpt[0]["vocab_size"], size=1600 + 32 - 1))
        want = ref.forward(ckpt, ids)

        got = run_cpp(out, ids, 1600, "--weights", "stored")
        diff = float(np.abs(got - want).max())
        cos, agree = stats(got, want)
        top2 = np.sort(want, axis=-1)[:, -2:]
        near_tie = ~agree & (top2[:, 1] - top2[:, 0] < 10 * diff)
        check(f"{preset} converted, --weights stored vs float64",
              int((~agree & ~near_tie).sum()) == 0 and cos.min() >= 0.99999 and np.isfinite(got).all(),
              f"max_abs_diff={diff:.3e} min_cos={cos.min():.8f} near_ties={int(near_tie.sum())}")

        got = run_cpp(out, ids, 1600)  # the defaults: --weights q4_0 --activations int8x2
        cos, agree = stats(got, want)
        check(f"{preset} converted, default q4_0/int8x2 vs float64",
              cos.mean() >= 0.999 and agree.mean() >= 0.99 and np.isfinite(got).all(),
              f"mean_cos={cos.mean():.7f} min_cos={cos.min():.7f} argmax_agreement={agree.mean():.4f}")

        got = run_cpp(out, ids, 1600, "--activations", "int8")
        cos, agree = stats(got, want)
        print(f"     w4a8 int8 activations (not gated): mean_cos={cos.mean():.7f} argmax_agreement={agree.mean():.4f}")
        drift = ref.forward(ref.load_checkpoint(hf), ids[:400])
        cos, agree = stats(got[:400], drift)
        print(f"     drift of the converted model vs the bf16 checkpoint, 400 positions (not gated): "
              f"mean_cos={cos.mean():.5f} argmax_agreement={agree.mean():.4f}")
    if failures:
        raise SystemExit(f"FAILED: {failures}")


if __name__ == "__main__":
    main()
