"""Shared by the numerics tests: run `ringlm logits` and compare its rows with a reference."""
import os
import subprocess

import numpy as np


def run_logits(ringlm, tmp, model, ids, decode_from, *flags):
    """Logits [len(ids), vocab] as float64; positions >= decode_from go through decode."""
    out = os.path.join(tmp, "logits.bin")
    ids_file = os.path.join(tmp, "ids.txt")
    with open(ids_file, "w") as f:
        f.write(",".join(map(str, ids)))
    r = subprocess.run([ringlm, "logits", "--model", model, "--ids-file", ids_file, "--out", out,
                        "--decode-from", str(decode_from), *flags], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"ringlm logits failed: {r.stderr}")
    return np.fromfile(out, dtype="<f4").reshape(len(ids), -1).astype(np.float64)


def cosine_and_argmax(got, want):
    """Per row: cosine similarity, and whether the argmax agrees."""
    cos = (got * want).sum(-1) / (np.linalg.norm(got, axis=-1) * np.linalg.norm(want, axis=-1))
    return cos, got.argmax(-1) == want.argmax(-1)
