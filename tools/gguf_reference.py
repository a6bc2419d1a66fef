#!/usr/bin/env python3
"""float64 weights of a GGUF file exactly as its own blocks decode, for
tests/model/reference_forward.py on full-size models: every tensor is decoded by the
independent numpy restatement of ggml's layouts (tests/io/gguf_py.py) when it is used, a block
of rows at a time for the vocabulary-sized tables, so no float64 copy of the model is held.
Names and config come from `ringlm inspect FILE` / `ringlm inspect FILE --config` (the same
source tests/model/gguf_published_test.py uses on the tiny fixtures).

So a K-quant or IQ file (llama-quantize's Q4_K_M, Q3_K_M, IQ4_XS, ...) is measured against
the weights it holds, not against a q4_0 restatement of the checkpoint it came from:
tools/numerics_vs_peer.py --reference gguf."""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "model"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "io"))
import gguf_py as g  # noqa: E402
import reference_forward as ref  # noqa: E402


class _GgufStored(ref._Stored):
    """One GGUF tensor ([out, in] as PyTorch sees it), decoded to float64 on use."""

    def __init__(self, t, ne, raw, where):
        self.t, self.raw, self.where = t, raw, where
        self.shape = tuple(reversed([int(x) for x in ne]))
        _, be, bb = g.TYPES[t]
        self.rb = int(ne[0]) // be * bb

    def full(self):
        v, _ = g.decode(self.t, self.raw, int(np.prod(self.shape, dtype=np.int64)))
        return v.reshape(self.shape)

    def rows(self, idx):
        idx = np.asarray(idx)
        block = np.frombuffer(self.raw, np.uint8).reshape(self.shape[0], self.rb)[idx]
        v, _ = g.decode(self.t, block.tobytes(), len(idx) * int(np.prod(self.shape[1:], dtype=np.int64)))
        return v.reshape((len(idx),) + self.shape[1:])


def canonical_names(ringlm, path):
    """GGUF tensor name -> canonical (HF) name, from `ringlm inspect`'s tensor table."""
    out = subprocess.run([ringlm, "inspect", path], check=True, capture_output=True, text=True).stdout
    names = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 6 and line.startswith("  ") and parts[0].endswith(".weight") and parts[-1] != parts[0] \
                or len(parts) >= 6 and parts[0] == "rope_freqs.weight":
            names[parts[0]] = parts[-1]
    return names


def checkpoint(ringlm, path):
    """(text config, weights) of a gemma4 GGUF; also the count of tensors per ggml type."""
    c = json.loads(subprocess.run([ringlm, "inspect", path, "--config"], check=True, capture_output=True,
                                  text=True).stdout)
    c = c.get("text_config", c)
    _, tensors = g.read_gguf(path)
    names = canonical_names(ringlm, path)
    W = ref._Weights()
    types = {}
    for gname, (t, ne, raw) in tensors.items():
        if gname not in names:
            continue
        types[g.TYPES[t][0]] = types.get(g.TYPES[t][0], 0) + 1
        dict.__setitem__(W, names[gname], _GgufStored(t, ne, raw, f"{path}: {gname}"))
    return c, W, types
