#!/usr/bin/env python3
"""GGUF files as llama.cpp's llama-quantize writes them (issue #29, "the files as published"):
tests/data/gguf/tiny-*.gguf are llama-quantize presets (Q4_K_M, IQ4_XS: mixed types, with the
fallback types llama-quantize picks for rows that are not whole super-blocks) of one tiny
ringlm model (tests/data/README.md says how they were made). ringlm never wrote these bytes.

For each file: every tensor type ringlm meets is listed; `ringlm logits --activations f32
--kv-type f32 --weights stored` (matrices decoded row by row, exact; F16 matrices kept as stored) is compared with reference_forward.py run
over the file's weights decoded by the independent numpy decoder (tests/io/gguf_py.py), the
config from `ringlm inspect --config` and the names from `ringlm inspect`: argmax 100 %,
cosine >= 0.9999. The default path (int8 activations; types without a kernel converted to
Q8_0 at load) is gated looser: mean cosine >= 0.999, argmax agreement >= 0.9.

Extra files (e.g. other presets made locally) can be passed as arguments."""
import glob
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "io"))
import gguf_py as g  # noqa: E402
import logits_cli  # noqa: E402
import reference_forward as ref  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_gguf_published")
DATA = os.environ.get("RINGLM_TEST_DATA_DIR", os.path.join(HERE, "..", "data"))
os.makedirs(TMP, exist_ok=True)
failures = []


def check(label, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {label} {detail}")
    if not ok:
        failures.append(label)


def canonical_names(path):
    """GGUF tensor name -> canonical (HF) name, from `ringlm inspect`'s table."""
    out = subprocess.run([RINGLM, "inspect", path], check=True, capture_output=True, text=True).stdout
    names = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 6 and line.startswith("  ") and parts[0].endswith(".weight") and parts[-1] != parts[0] \
                or len(parts) >= 6 and parts[0] == "rope_freqs.weight":
            names[parts[0]] = parts[-1]
    return names


class _Arrays(ref._Weights):
    """Every tensor is already a float64 array here."""

    def __getitem__(self, name):
        return dict.__getitem__(self, name)


def reference_weights(path):
    meta, tensors = g.read_gguf(path)
    names = canonical_names(path)
    W = _Arrays()
    types = {}
    for gname, (t, ne, raw) in tensors.items():
        types[g.TYPES[t][0]] = types.get(g.TYPES[t][0], 0) + 1
        if gname not in names:
            continue
        v, _ = g.decode(t, raw, int(np.prod(ne)))
        dict.__setitem__(W, names[gname], v.reshape(tuple(reversed(ne))))
    return W, types


def main(paths):
    ids = [2] + list(np.random.default_rng(5).integers(0, 768, size=120 + 8 - 1))
    for path in paths:
        label = os.path.basename(path)
        c = json.loads(subprocess.run([RINGLM, "inspect", path, "--config"], check=True, capture_output=True,
                                      text=True).stdout)
        c = c.get("text_config", c)
        W, types = reference_weights(path)
        print(f"     {label}: tensor types {dict(sorted(types.items()))}")
        want = ref.forward((c, W), ids)
        got = logits_cli.run_logits(RINGLM, TMP, path, ids, 120, "--activations", "f32", "--kv-type", "f32",
                                   "--weights", "stored")
        cos, agree = logits_cli.cosine_and_argmax(got, want)
        check(f"{label}: f32 activations vs float64 over the dequantized weights", agree.all() and cos.min() >= 0.9999,
              f"argmax_agreement={agree.mean():.4f} min_cos={cos.min():.8f}")
        got = logits_cli.run_logits(RINGLM, TMP, path, ids, 120, "--weights", "stored")
        cos, agree = logits_cli.cosine_and_argmax(got, want)
        check(f"{label}: default activations (int8; types without a kernel as Q8_0)",
              cos.mean() >= 0.999 and agree.mean() >= 0.9, f"mean_cos={cos.mean():.6f} argmax_agreement={agree.mean():.4f}")
    if failures:
        raise SystemExit(f"FAILED: {failures}")


if __name__ == "__main__":
    files = sorted(glob.glob(os.path.join(DATA, "gguf", "tiny-*.gguf"))) + sys.argv[1:]
    if not files:
        raise SystemExit("no fixture files found")
    main(files)
