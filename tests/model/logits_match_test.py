#!/usr/bin/env python3
"""The C++ decoder (`ringlm logits`) against the independent float64 reference
(reference_forward.py) on random tiny checkpoints: long prompts through chunked prefill
followed by single-token decode, all-decode runs, prompt lengths that are not a multiple of
the 64-token chunk, GQA, F16/F32 weights, sharded files, flat config, `model.` prefix and
checkpoints that carry the unused K/V tensors of KV-shared layers.

Per position: argmax identical and cosine similarity >= 0.99999. The only tolerated
argmax difference is a reference near-tie (top-2 gap below 10x the measured max abs
difference); it is counted and printed, and expected to be zero.

The runs use the default f16 KV cache (docs/attention.md: its rounding is most of the
remaining difference). For the first model also: the same run against a reference that
rounds K/V to f16 as the cache does (min cosine >= 0.999999, ten times tighter), and a
--kv-type f32 run against the plain reference."""
import os
import subprocess
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep the source tree clean when importing the reference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_forward as ref  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_logits_match")
os.makedirs(TMP, exist_ok=True)
failures = []


def make_model(name, *flags):
    out = os.path.join(TMP, name)
    subprocess.run([RINGLM, "make-test-model", out, *flags], check=True, capture_output=True)
    return out


def run_cpp(model, ids, decode_from, kv_type="f16"):
    out = os.path.join(TMP, "logits.bin")
    ids_file = os.path.join(TMP, "ids.txt")
    with open(ids_file, "w") as f:
        f.write(",".join(map(str, ids)))
    r = subprocess.run([RINGLM, "logits", "--model", model, "--ids-file", ids_file, "--out", out,
                        "--decode-from", str(decode_from), "--weights", "stored", "--kv-type", kv_type],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"ringlm logits failed: {r.stderr}")
    logits = np.fromfile(out, dtype="<f4").reshape(len(ids), -1)
    printed = [int(line.split("\t")[1]) for line in r.stdout.strip().splitlines()]
    assert printed == list(logits.argmax(axis=-1)), "printed argmax differs from the written logits"
    return logits.astype(np.float64)


def compare(label, got, want, min_cos=0.99999):
    assert got.shape == want.shape, (label, got.shape, want.shape)
    diff = np.abs(got - want)
    max_diff = float(diff.max())
    cos = (got * want).sum(-1) / (np.linalg.norm(got, axis=-1) * np.linalg.norm(want, axis=-1))
    am_got, am_want = got.argmax(-1), want.argmax(-1)
    top2 = np.sort(want, axis=-1)[:, -2:]
    gap = top2[:, 1] - top2[:, 0]
    mismatch = am_got != am_want
    near_tie = mismatch & (gap < 10 * max_diff) & (want[np.arange(len(want)), am_got] >= top2[:, 1] - 10 * max_diff)
    hard = mismatch & ~near_tie
    ok = not hard.any() and cos.min() >= min_cos and np.isfinite(got).all()
    print(f"{'ok  ' if ok else 'FAIL'} {label}: T={len(got)} max_abs_diff={max_diff:.3e} min_cos={cos.min():.8f} "
          f"argmax_mismatch={int(hard.sum())} near_ties={int(near_tie.sum())} "
          f"logit_std={want.std():.2f} max|logit|={np.abs(want).max():.2f}")
    if not ok:
        failures.append(label)


def check(label, model, n_tokens, decode_froms, seed, kv_checks=False):
    rng = np.random.default_rng(seed)
    ckpt = ref.load_checkpoint(model)
    vocab = ckpt[0]["vocab_size"]
    ids = [2] + list(rng.integers(0, vocab, size=n_tokens - 1))
    want = ref.forward(ckpt, ids)
    # Healthy random model: logits neither flat nor pinned to the soft cap.
    assert 1.0 < want.std() < 15.0, f"{label}: unhealthy logits std {want.std()}"
    for decode_from in decode_froms:
        got = run_cpp(model, ids, decode_from)
        compare(f"{label} decode_from={decode_from}", got, want)
    if kv_checks:
        compare(f"{label} decode_from={decode_from} vs f16-rounded K/V reference", got,
                ref.forward(ckpt, ids, kv_f16=True), min_cos=0.999999)
        compare(f"{label} decode_from={decode_froms[0]} --kv-type f32", run_cpp(model, ids, decode_froms[0], "f32"), want)


def main():
    for seed in (1, 2):
        m = make_model(f"tiny-s{seed}", "--preset", "tiny", "--seed", str(seed))
        # 1637 tokens: prefill 1600 (25 chunks of 64) + 37 decode; all decode; and a 1605-token
        # prefill that ends inside a chunk.
        check(f"tiny seed={seed}", m, 1637, [1600, 0, 1605], seed=100 + seed, kv_checks=seed == 1)
    check("tiny-gqa", make_model("gqa", "--preset", "tiny-gqa", "--seed", "3"), 700, [650, 0, 77], seed=7)
    variants = {
        "f16": ["--dtype", "f16"],
        "f32": ["--dtype", "f32"],
        "shards3": ["--shards", "3"],
        "flat-config": ["--flat-config", "--prefix", "model."],
        "prefix-model": ["--prefix", "model."],
        "with-shared-kv": ["--with-shared-kv"],
        "gqa-f32-shards2-shared-kv": ["--preset", "tiny-gqa", "--dtype", "f32", "--shards", "2", "--with-shared-kv"],
    }
    for i, (name, flags) in enumerate(variants.items()):
        check(name, make_model(name, "--seed", str(10 + i), *flags), 300, [200], seed=20 + i)
    if failures:
        print("FAILED:", ", ".join(failures))
        return 1
    print("all logits match the float64 reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
