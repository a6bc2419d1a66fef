#!/usr/bin/env python3
"""Lattice-exact q4_0 import (kernels/q4_lattice.h, docs/quantization.md) on a checkpoint that
behaves like a QAT one: `make-test-model --qat` writes the matrices q4_0 quantizes exactly on
an int4 lattice with bf16 block scales (codes in [-8, 7] and in [-7, 7], +7 extremes, scales
below fp16's normal range), as float32.

1. `ringlm convert`: prints that 100 % of the q4_0 blocks were recovered exactly; every q4p16
   matrix read back by packed_reader.py (an independent numpy reader, row factors included)
   equals the checkpoint's matrix exactly; `ringlm inspect` names the rule.
2. `ringlm logits --weights q4_0 --activations f32 --kv-type f32` on the checkpoint directory
   (load-time quantization) against reference_forward.py (float64) over the true lattice
   weights: argmax 100 %, cosine >= 0.99999. (The f32 KV cache isolates the weights: the
   default f16 cache alone costs one near-tie argmax in 632 positions here.) The same on the converted directory against float64 over
   packed_reader's weights (whose matrices are the lattice weights; its embedding lookup is
   the sidecar's int8 table, as the format defines).
3. The naive ggml rule (numpy restatement: d = first-largest-magnitude / -8, fp16 d) on the
   same weights, for comparison: its share of exact blocks and its argmax agreement and KL
   against the true-lattice float64 logits are printed; the test requires that it is worse
   than ours (so the fixture really exercises what the import fixes).
4. `ringlm convert --out F.gguf --type q4_0` (ggml's layout, f16 d): the count it prints of
   blocks stored exactly equals what the file decodes to (gguf_py), the blocks whose scale f16
   cannot hold are reported, and the file keeps more blocks exact than ggml's rule."""
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logits_cli  # noqa: E402
import packed_reader  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "io"))
import gguf_py  # noqa: E402
import reference_forward as ref  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_qat_import")
os.makedirs(TMP, exist_ok=True)
failures = []


def check(label, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {label} {detail}")
    if not ok:
        failures.append(label)


def ggml_q4_0(w):
    """ggml's q4_0 rule in float32 steps, dequantized (the naive conversion)."""
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


def softmax_kl(p_logits, q_logits):
    """Mean KL(p || q) per position, natural log."""
    def log_softmax(z):
        z = z - z.max(-1, keepdims=True)
        return z - np.log(np.exp(z).sum(-1, keepdims=True))
    lp, lq = log_softmax(p_logits), log_softmax(q_logits)
    return float((np.exp(lp) * (lp - lq)).sum(-1).mean())


def gate(label, got, want):
    cos, agree = logits_cli.cosine_and_argmax(got, want)
    ok = bool(agree.all()) and cos.min() >= 0.99999 and np.isfinite(got).all()
    check(label, ok, f"argmax_agreement={agree.mean():.4f} min_cos={cos.min():.8f} "
                     f"max_abs_diff={np.abs(got - want).max():.3e}")


class _Overrides(ref._Weights):
    def __getitem__(self, name):
        t = dict.__getitem__(self, name)
        return t if isinstance(t, np.ndarray) else ref._Weights.__getitem__(self, name)


def lattice_matrices(stored):
    """The checkpoint's matrices that q4_0 quantizes (float32 in a --qat checkpoint)."""
    out = {}
    for name in stored:
        t = dict.__getitem__(stored, name)
        if len(t.shape) == 2 and t.shape[1] % 32 == 0 and t.dtype == "F32":
            out[name] = t.full()
    return out


def gguf_export(hf, mats, naive_exact):
    """4. `convert --out F.gguf --type q4_0`: ggml's layout (f16 d) keeps every lattice block's
    codes, with a negative d where the extreme code is +8, but cannot hold scales below fp16's
    range; the count it prints of blocks stored exactly must equal the blocks that decode here
    (gguf_py) to the checkpoint's values, and the rest must be reported as not held."""
    path = os.path.join(TMP, "qat.gguf")
    r = subprocess.run([RINGLM, "convert", "--model", hf, "--out", path, "--type", "q4_0"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"ringlm convert --out qat.gguf failed: {r.stderr}")
    m = re.search(r"q4_0 blocks: (\d+); on an int4 lattice (\d+), stored exactly (\d+) \(([\d.]+) %\); lattice blocks "
                  r"whose scale GGUF's f16 d could not hold exactly: (\d+)", r.stdout)
    check("convert to GGUF prints the blocks stored exactly and those its f16 d could not hold", m is not None,
          r.stdout.strip()[-300:])
    if not m:
        return
    blocks, lattice, exact, missed = (int(m.group(i)) for i in (1, 2, 3, 5))
    shown = subprocess.run([RINGLM, "inspect", path], check=True, capture_output=True, text=True).stdout
    canonical = {p[0]: p[-1] for p in (line.split() for line in shown.splitlines() if line.startswith("  "))
                 if len(p) >= 6 and p[0].endswith(".weight")}
    _, tensors = gguf_py.read_gguf(path)
    n_blocks = n_exact = 0
    for name, (t, ne, raw) in tensors.items():
        if gguf_py.TYPES[t][0] != "Q4_0" or canonical.get(name) not in mats:
            continue  # the fixture's other matrices are plain bf16, not on a lattice
        want = mats[canonical[name]]
        got, _ = gguf_py.decode(t, raw, want.size)
        same = (got.reshape(-1, 32) == want.reshape(-1, 32)).all(-1)
        n_blocks += same.size
        n_exact += int(same.sum())
    check("GGUF: the lattice blocks are those of the lattice matrices, the printed counts add up",
          lattice == n_blocks <= blocks and exact + missed == lattice,
          f"(printed {blocks} blocks, {lattice} on a lattice; the lattice matrices hold {n_blocks})")
    check("GGUF: the printed exact count is what the file decodes to, and some tiny scales are reported as not held",
          exact == n_exact and 0 < missed < blocks, f"(printed {exact}, decoded {n_exact}, not held {missed})")
    check("GGUF: ggml's layout keeps more lattice blocks than ggml's rule", n_exact > naive_exact,
          f"({n_exact} vs {naive_exact} of {n_blocks})")
    print(f"     GGUF q4_0 export: {n_exact} of {n_blocks} blocks exact ({100.0 * n_exact / n_blocks:.1f} %), "
          f"{missed} lattice blocks whose scale f16 cannot hold")


def main():
    preset, seed = "tiny", 3
    hf = os.path.join(TMP, "qat-hf")
    out = os.path.join(TMP, "qat-packed")
    subprocess.run([RINGLM, "make-test-model", hf, "--preset", preset, "--seed", str(seed), "--qat"], check=True,
                   capture_output=True)
    c, stored = ref.load_checkpoint(hf)
    mats = lattice_matrices(stored)
    check("the --qat checkpoint stores its lattice matrices as float32", len(mats) >= 9 * c["num_hidden_layers"] // 2,
          f"({len(mats)} matrices)")

    # 1. convert: the share it prints, the matrices it wrote, the rule inspect shows.
    r = subprocess.run([RINGLM, "convert", "--model", hf, "--out", out], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"ringlm convert failed: {r.stderr}")
    print(r.stdout.strip())
    m = re.search(r"q4_0 blocks: (\d+); on an int4 lattice (\d+) .*recovered exactly \(codes and scale\) (\d+) "
                  r"\(([\d.]+) %\).*?(\d+) rows need a power-of-two factor \(row factors: (\d+) bytes\)", r.stdout)
    check("convert prints the share of blocks recovered exactly", m is not None)
    if m:
        blocks, lattice, exact = int(m.group(1)), int(m.group(2)), int(m.group(3))
        check("convert: 100 % of the q4_0 blocks recovered exactly", blocks > 0 and exact == blocks == lattice,
              f"({exact} of {blocks}; {m.group(5)} rows with a factor, {m.group(6)} bytes of row factors)")
        check("convert: the tiny-scale blocks needed row factors", int(m.group(5)) > 0)
    text, W = packed_reader.load_packed(out)
    bad = n = 0
    for name, want in mats.items():
        got_name = "lm_head.weight" if name == "embed_tokens.weight" else name
        if got_name not in W:
            continue
        n += 1
        if not np.array_equal(W[got_name], want):
            bad += 1
            print(f"     {got_name}: {int((W[got_name] != want).sum())} values differ")
    check("every q4p16 matrix (row factors applied) equals the checkpoint's lattice matrix", n > 0 and bad == 0,
          f"({n} matrices)")
    r = subprocess.run([RINGLM, "inspect", out], capture_output=True, text=True)
    check("inspect shows the q4_0 rule and the block counts",
          r.returncode == 0 and "q4_0 rule: lattice-exact" in r.stdout and "stored exactly" in r.stdout,
          r.stdout.splitlines()[1] if r.returncode == 0 and len(r.stdout.splitlines()) > 1 else r.stderr)

    # 2. logits against float64 over the true lattice weights.
    rng = np.random.default_rng(seed)
    ids = [2] + list(rng.integers(0, c["vocab_size"], size=600 + 32 - 1))
    true_logits = ref.forward((c, stored), ids)
    got = logits_cli.run_logits(RINGLM, TMP, hf, ids, 600, "--weights", "q4_0", "--activations", "f32", "--kv-type", "f32")
    gate("load-time q4_0 of the checkpoint, f32 activations, vs float64 over the lattice weights", got, true_logits)
    packed_logits = ref.forward((text, W), ids)
    got = logits_cli.run_logits(RINGLM, TMP, out, ids, 600, "--activations", "f32", "--kv-type", "f32")
    gate("converted directory, f32 activations, vs float64 over its dequantized weights", got, packed_logits)
    cos, agree = logits_cli.cosine_and_argmax(packed_logits, true_logits)
    print(f"     (converted directory's int8 embedding lookup vs the true weights, float64 both: "
          f"argmax_agreement={agree.mean():.4f} min_cos={cos.min():.6f})")

    # 3. the naive ggml rule on the same weights.
    naive = _Overrides()
    for name in stored:
        dict.__setitem__(naive, name, dict.__getitem__(stored, name))
    exact_blocks = total_blocks = 0
    for name, w in mats.items():
        q = ggml_q4_0(w)
        same = (q.reshape(w.shape[0], -1, 32) == w.reshape(w.shape[0], -1, 32)).all(-1)
        exact_blocks += int(same.sum())
        total_blocks += same.size
        if name != "embed_tokens.weight":
            dict.__setitem__(naive, name, q)
    cn = dict(c)
    dict.__setitem__(naive, "lm_head.weight", ggml_q4_0(mats["embed_tokens.weight"]))
    cn["tie_word_embeddings"] = False
    naive_logits = ref.forward((cn, naive), ids)
    cos, agree = logits_cli.cosine_and_argmax(naive_logits, true_logits)
    kl = softmax_kl(true_logits, naive_logits)
    print(f"     naive ggml rule: {exact_blocks} of {total_blocks} blocks exact "
          f"({100.0 * exact_blocks / total_blocks:.1f} %); float64 over its weights vs the true lattice: "
          f"argmax_agreement={agree.mean():.4f} mean_cos={cos.mean():.6f} mean_KL={kl:.3e}")
    check("the naive ggml rule loses blocks on this fixture (the fixture exercises the import)",
          exact_blocks < total_blocks)
    gguf_export(hf, mats, exact_blocks)
    if failures:
        raise SystemExit(f"FAILED: {failures}")


if __name__ == "__main__":
    main()
