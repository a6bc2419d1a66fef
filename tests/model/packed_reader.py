#!/usr/bin/env python3
"""Independent numpy reader of ringlm's packed model directory (docs/convert.md), written
from the format description, sharing no code with the C++ engine: weights.rlpk's header and
JSON index, the q4p16 layout (16-row groups: codes [nb][4][16][4] bytes, then [nb][16] fp16
scales) with, from version 2, each q4p16 tensor's NAME.row_factors (f32 per row, multiplying
the row's values), and the int8 sidecar tables with their f32 row scales.

load_packed(dir) -> (text_config, weights) in the form reference_forward.forward() takes:
float64 arrays by canonical name, with the LM head as lm_head.weight (tie switched off, since
the head is the q4_0 copy while the embedding rows come from the int8 sidecar)."""
import json
import os
import struct

import numpy as np

MAGIC = b"RLMPACK\0"


def read_index(path):
    with open(path, "rb") as f:
        head = f.read(24)
        if head[:8] != MAGIC:
            raise ValueError(f"{path}: bad magic")
        version, _reserved, n = struct.unpack("<IIQ", head[8:24])
        if version not in (1, 2):
            raise ValueError(f"{path}: version {version}")
        index = json.loads(f.read(n))
    data_start = (24 + n + 63) // 64 * 64
    return index, data_start


def q4p16_dequant(raw, rows, cols):
    """float64 [rows, cols] from q4p16 bytes."""
    nb = cols // 32
    groups = (rows + 15) // 16
    g = np.frombuffer(raw, dtype=np.uint8).reshape(groups, nb * 288)
    codes = g[:, :nb * 256].reshape(groups, nb, 4, 16, 4)           # [g][b][t][r][4]
    scales = g[:, nb * 256:].copy().view("<f2").reshape(groups, nb, 16)  # [g][b][r]
    qs = codes.transpose(0, 3, 1, 2, 4).reshape(groups, 16, nb, 16)   # [g][r][b][16 bytes of qs]
    lo = (qs & 0x0F).astype(np.int32) - 8                              # elements 0..15
    hi = (qs >> 4).astype(np.int32) - 8                                # elements 16..31
    q = np.concatenate([lo, hi], axis=-1)                              # [g][r][b][32]
    d = scales.transpose(0, 2, 1)[..., None].astype(np.float32)        # [g][r][b][1]
    w = (d * q.astype(np.float32)).astype(np.float32)                  # float32, as the engine
    return w.reshape(groups * 16, cols)[:rows].astype(np.float64)


def read_i8_table(side, stem, rows, cols):
    codes = np.fromfile(os.path.join(side, stem + ".i8"), dtype=np.int8)
    scale = np.fromfile(os.path.join(side, stem + ".scale.f32"), dtype="<f4")
    if codes.size != rows * cols or scale.size != rows:
        raise ValueError(f"{side}/{stem}: sizes {codes.size}, {scale.size} for [{rows}, {cols}]")
    codes = codes.reshape(rows, cols)
    # float32 product (scale * q), as the engine dequantizes, then float64.
    return (scale[:, None] * codes.astype(np.float32)).astype(np.float32).astype(np.float64), codes, scale


def load_packed(directory):
    with open(os.path.join(directory, "config.json")) as f:
        cfg = json.load(f)
    text = dict(cfg.get("text_config", cfg))
    path = os.path.join(directory, "weights.rlpk")
    index, data_start = read_index(path)
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    W = {}
    for t in index["tensors"]:
        begin = data_start + t["offset"]
        raw = np.asarray(mm[begin:begin + t["bytes"]])
        assert begin % 64 == 0, t["name"]
        if t["dtype"] == "Q4_0":
            assert t["layout"] == "q4p16"
            W[t["name"]] = q4p16_dequant(raw.tobytes(), *t["shape"])
        elif t["layout"] == "row_factors":
            base = t["name"][:-len(".row_factors")]
            f = raw.view("<f4").astype(np.float32)
            # float32 product, as the engine scales each output (exact: powers of two)
            W[base] = (W[base].astype(np.float32) * f[:, None]).astype(np.float32).astype(np.float64)
        else:
            W[t["name"]] = raw.view("<f4").astype(np.float64).reshape(t["shape"])
    side = os.path.join(directory, "gemma4_qat_gather_raw")
    with open(os.path.join(side, "meta.json")) as f:
        meta = json.load(f)
    V, D, L, ld = meta["V"], meta["D"], meta["L"], meta["ld"]
    W["embed_tokens.weight"] = read_i8_table(side, "embed_tokens", V, D)[0]
    W["embed_tokens_per_layer.weight"] = read_i8_table(side, "embed_per_layer", meta["V_pl"], L * ld)[0]
    text["tie_word_embeddings"] = False
    return text, W
