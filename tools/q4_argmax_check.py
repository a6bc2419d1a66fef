#!/usr/bin/env python3
"""Argmax agreement and cosine of the fast path against float64 on a full-size checkpoint
(issue #14: "the default path's argmax agreement with float64 on the full-size E2B, 200
positions, random ids"). Not a CI test: minutes of numpy on E2B.

    RINGLM=build/ringlm tools/q4_argmax_check.py --hf /work/models/e2b/hf \
        --model /work/models/e2b/packed [--positions 200] [--decode-from 100] [--seed 1] \
        [-- extra ringlm logits flags, e.g. --activations int8]

The float64 side is tests/model/reference_forward.py over the Hugging Face weights with every
linear layer and the LM head replaced by its q4_0 quantize-dequantize (the numpy restatement
of ggml's rule in tests/model/q4_numerics_test.py), done lazily one matrix (or head block) at
a time so no float64 copy of the model is held. So what is measured is what the fast path
adds on top of q4_0 weights: int8 / int8x2 activations, the f16 KV cache, float32 sums, and
(a packed directory) the int8 embedding and per-layer tables of the sidecar. Positions below
--decode-from go through chunked prefill, the rest through single-token decode.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "model"))
os.environ.setdefault("RINGLM", os.path.join(HERE, "..", "build", "ringlm"))
import logits_cli  # noqa: E402
import reference_forward as ref  # noqa: E402
from q4_numerics_test import LINEAR, q4_0_dequant  # noqa: E402


class _Q4Stored(ref._Stored):
    """A stored matrix seen through q4_0: rows are quantized and dequantized when read."""

    def __init__(self, stored):
        self.__dict__.update(stored.__dict__)

    def full(self):
        return q4_0_dequant(super().full())

    def rows(self, idx):
        return q4_0_dequant(super().rows(idx))


class _Q4Weights(ref._Weights):
    def __init__(self, stored, quantized):
        super().__init__()
        for name in stored:
            dict.__setitem__(self, name, dict.__getitem__(stored, name))
        self.quantized = quantized

    def __getitem__(self, name):
        t = dict.__getitem__(self, name)
        if name in self.quantized:
            return _Q4Stored(t) if name in _LAZY else q4_0_dequant(t.full())
        return ref._Weights.__getitem__(self, name)


# The vocabulary-sized tables: quantized a block of rows at a time when read, never whole.
_LAZY = ("lm_head.weight", "embed_tokens.weight", "embed_tokens_per_layer.weight")


def quantized_checkpoint(hf_dir, q4_embeddings=False):
    """(config, weights) with every linear layer and the LM head seen through q4_0; with
    q4_embeddings also the two embedding tables, as a GGUF that stores them in q4_0 has them
    (token_embd, per_layer_token_embd): the lookups then read the q4_0 rows too."""
    c, stored = ref.load_checkpoint(hf_dir)
    quantized = set()
    for name in list(stored):
        parts = name.split(".")
        is_linear = name.startswith("layers.") and ".".join(parts[2:-1]) in LINEAR
        if (is_linear or name == "per_layer_model_projection.weight") and dict.__getitem__(stored, name).shape[1] % 32 == 0:
            quantized.add(name)
    c = dict(c)
    head = "embed_tokens.weight" if c.get("tie_word_embeddings", True) else "lm_head.weight"
    dict.__setitem__(stored, "lm_head.weight", dict.__getitem__(stored, head))
    quantized.add("lm_head.weight")
    if q4_embeddings:
        quantized.update(n for n in ("embed_tokens.weight", "embed_tokens_per_layer.weight") if n in stored)
    c["tie_word_embeddings"] = False
    return c, _Q4Weights(stored, quantized)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hf", required=True, help="Hugging Face checkpoint directory (the float side)")
    ap.add_argument("--model", required=True, help="what ringlm loads (packed directory, or the same HF directory)")
    ap.add_argument("--positions", type=int, default=200)
    ap.add_argument("--decode-from", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("flags", nargs="*", help="extra `ringlm logits` flags (after --)")
    a = ap.parse_args()
    c, W = quantized_checkpoint(a.hf)
    rng = np.random.default_rng(a.seed)
    ids = [2] + [int(i) for i in rng.integers(0, c["vocab_size"], size=a.positions - 1)]
    with tempfile.TemporaryDirectory() as tmp:
        got = logits_cli.run_logits(os.environ["RINGLM"], tmp, a.model, ids, a.decode_from, *a.flags)
    want = ref.forward((c, W), ids)
    cos, agree = logits_cli.cosine_and_argmax(got, want)
    pre, dec = slice(0, a.decode_from), slice(a.decode_from, None)
    print(f"{a.model} vs float64 over q4_0 weights, {len(ids)} positions (seed {a.seed}, decode from "
          f"{a.decode_from}), flags {' '.join(a.flags) or '(default)'}:")
    print(f"  argmax agreement {agree.mean():.4f} ({int(agree.sum())}/{len(ids)}; prefill {agree[pre].mean():.4f}, "
          f"decode {agree[dec].mean():.4f}), cosine mean {cos.mean():.6f} min {cos.min():.6f}")


if __name__ == "__main__":
    main()
