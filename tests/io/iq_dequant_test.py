#!/usr/bin/env python3
"""ringlm's dequantization of ggml's codebook formats (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
IQ1_S, IQ1_M; kernels/dequant_iq.cpp) against llama.cpp's own, bit for bit.

tests/data/gguf/iq-llama-quantize.gguf holds tensors written by llama.cpp's llama-quantize
(presets IQ2_XXS, IQ2_XS, IQ2_M, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M of one tiny ringlm model, bytes
copied unchanged); iq-llama-dequant.json holds, per tensor, the SHA-256 of the float32 values
llama.cpp's ggml dequantizes them to (and the first 16 as bit patterns, for a readable diff).
tests/data/README.md says how both were made. ringlm reads the file with its GGUF reader and
dequantizes every tensor (`gguf_testgen dequant`); each must hash the same."""
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_py as g  # noqa: E402

DATA = os.environ.get("RINGLM_TEST_DATA_DIR", os.path.join(HERE, "..", "data"))
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_iq_dequant")
tool = os.path.join(os.environ["RINGLM_BUILD_DIR"], "tools", "gguf_testgen")
os.makedirs(TMP, exist_ok=True)


def main():
    src = os.path.join(DATA, "gguf", "iq-llama-quantize.gguf")
    expect = json.load(open(os.path.join(DATA, "gguf", "iq-llama-dequant.json")))
    out = os.path.join(TMP, "iq-dequant.gguf")
    subprocess.run([tool, "dequant", src, out], check=True)
    _, raw = g.read_gguf(src)
    _, deq = g.read_gguf(out)
    failures, seen = [], set()
    for name, e in expect.items():
        t, ne, _ = raw[name]
        if g.TYPES[t][0] != e["type"]:
            failures.append(f"{name}: type {g.TYPES[t][0]} in the file, {e['type']} expected")
            continue
        got = deq[name][2]
        ok = len(got) == 4 * int(np.prod(ne)) and hashlib.sha256(got).hexdigest() == e["sha256"]
        head = [f"{u:08x}" for u in np.frombuffer(got[:64], "<u4")]
        print(f"{'ok  ' if ok else 'FAIL'} {name} ({e['type']}, {int(np.prod(ne))} values)"
              + ("" if ok else f": first values {head} vs llama.cpp {e['head']}"))
        if not ok:
            failures.append(name)
        seen.add(e["type"])
    want = {"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"}
    if seen != want:
        failures.append(f"types covered {sorted(seen)}, expected {sorted(want)}")
    if failures:
        raise SystemExit(f"FAILED: {failures}")
    print(f"all {len(expect)} tensors bit-identical to llama.cpp's dequantization ({', '.join(sorted(seen))})")


if __name__ == "__main__":
    main()
