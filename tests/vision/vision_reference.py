#!/usr/bin/env python3
"""Independent float64 reference of Gemma 4's image processor and vision tower, written from
the published architecture (transformers' Gemma4ImageProcessorPil, Gemma4VisionModel and
Gemma4MultimodalEmbedder) and PIL's documented bicubic resampling. Shares no code with the
C++ in src/vision: it reads config.json, processor_config.json and the safetensors files
itself, and computes attention over the whole patch sequence at once.

  grid = preprocess(rgb_uint8_hwc, patch=16, pool=3, soft_tokens=280)  -> patches, (pw, ph)
  emb  = encode(load_tower(dir), patches, pw, ph)                       -> float64 [tokens, text_hidden]
"""
import json
import math
import os
import struct

import numpy as np


# ---- checkpoint -----------------------------------------------------------------------

def _read_safetensors(path):
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    (n,) = struct.unpack("<Q", bytes(raw[:8]))
    header = json.loads(bytes(raw[8:8 + n]))
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        data = np.asarray(raw[8 + n + b:8 + n + end])
        if e["dtype"] == "BF16":
            arr = (data.view("<u2").astype(np.uint32) << 16).view("<f4")
        elif e["dtype"] == "F16":
            arr = data.view("<f2")
        elif e["dtype"] == "F32":
            arr = data.view("<f4")
        else:
            continue
        out[name] = arr.astype(np.float64).reshape(e["shape"])
    return out


def load_tower(model_dir):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    tensors = {}
    for f in sorted(os.listdir(model_dir)):
        if f.endswith(".safetensors"):
            for k, v in _read_safetensors(os.path.join(model_dir, f)).items():
                if k.startswith("model.vision_tower.") or k.startswith("model.embed_vision."):
                    tensors[k[len("model."):]] = v
    return {"config": cfg["vision_config"], "t": tensors}


# ---- processor ------------------------------------------------------------------------

def target_size(height, width, patch, max_patches, pool):
    """get_aspect_ratio_preserving_size, in Python's own float arithmetic."""
    total_px = height * width
    target_px = max_patches * patch ** 2
    factor = math.sqrt(target_px / total_px)
    side = pool * patch
    th = int(math.floor(factor * height / side)) * side
    tw = int(math.floor(factor * width / side)) * side
    if th == 0 and tw == 0:
        raise ValueError("0x0")
    max_side = (max_patches // pool ** 2) * side
    if th == 0:
        th = side
        tw = min(int(math.floor(width / height)) * side, max_side)
    elif tw == 0:
        tw = side
        th = min(int(math.floor(height / width)) * side, max_side)
    if th * tw > target_px:
        raise ValueError("exceeds")
    return th, tw


def _cubic(x, a=-0.5):
    x = np.abs(x)
    return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, (((x - 5) * x + 8) * x - 4) * a, 0.0))


def _pil_weights(n_in, n_out):
    """PIL's resampling taps for one axis: a [n_out, n_in] matrix of 8-bit fixed-point
    integer weights (22 fraction bits), antialiased by widening the kernel when shrinking."""
    scale = n_in / n_out
    fs = max(scale, 1.0)
    support = 2.0 * fs
    W = np.zeros((n_out, n_in), dtype=np.int64)
    for o in range(n_out):
        center = (o + 0.5) * scale
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        xs = np.arange(lo, hi)
        w = _cubic((xs - center + 0.5) * (1.0 / fs))
        s = w.sum()
        if s != 0:
            w = w / s
        fixed = w * (1 << 22)
        W[o, lo:hi] = np.where(fixed < 0, np.trunc(fixed - 0.5), np.trunc(fixed + 0.5)).astype(np.int64)
    return W


def _pil_pass(img, W, axis):
    """One separable pass in PIL's integer arithmetic, rounded and clipped to uint8."""
    x = np.moveaxis(img.astype(np.int64), axis, 0)          # [n_in, ..., C]
    acc = np.tensordot(W, x, axes=([1], [0])) + (1 << 21)   # [n_out, ..., C]
    out = np.clip(acc >> 22, 0, 255).astype(np.uint8)
    return np.moveaxis(out, 0, axis)


def pil_bicubic(img, out_w, out_h):
    h, w, _ = img.shape
    if out_w != w:
        img = _pil_pass(img, _pil_weights(w, out_w), 1)
    if out_h != h:
        img = _pil_pass(img, _pil_weights(h, out_h), 0)
    return img


def preprocess(img, patch=16, pool=3, soft_tokens=280):
    """uint8 [H, W, 3] -> (patches [N, patch*patch*3] float32 in [0, 1], pw, ph)."""
    h, w, _ = img.shape
    th, tw = target_size(h, w, patch, soft_tokens * pool * pool, pool)
    if (th, tw) != (h, w):
        img = pil_bicubic(img, tw, th)
    x = (img.astype(np.float64) * (1 / 255)).astype(np.float32)       # rescale
    chw = x.transpose(2, 0, 1)
    ph, pw = th // patch, tw // patch
    p = chw.reshape(3, ph, patch, pw, patch).transpose(1, 3, 2, 4, 0).reshape(ph * pw, -1)
    return p, pw, ph


# ---- tower ----------------------------------------------------------------------------

def _rms(x, w=None, eps=1e-6):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y * w if w is not None else y


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def encode(tower, patches, pw, ph):
    c, t = tower["config"], tower["t"]
    H, D = c["hidden_size"], c["head_dim"]
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    eps, k = c.get("rms_norm_eps", 1e-6), c["pooling_kernel_size"]
    clipped = c.get("use_clipped_linears", False)
    n = patches.shape[0]
    xs = np.tile(np.arange(pw), ph)          # patch n = row * pw + col: (x, y) = (col, row)
    ys = np.repeat(np.arange(ph), pw)

    def lin(name, x):
        if clipped:
            x = np.clip(x, t[name + ".input_min"], t[name + ".input_max"])
        y = x @ t[name + ".linear.weight"].T
        if clipped:
            y = np.clip(y, t[name + ".output_min"], t[name + ".output_max"])
        return y

    # Patch embedder: pixels scaled to [-1, 1], linear, plus one table row per axis.
    pe = t["vision_tower.patch_embedder.position_embedding_table"]
    h = (2 * (patches.astype(np.float64) - 0.5)) @ t["vision_tower.patch_embedder.input_proj.weight"].T
    h = h + pe[0][xs] + pe[1][ys]

    # 2D RoPE: the first head_dim/2 channels rotate with x, the rest with y, each half a
    # rotate-half rotation with the default frequencies of width head_dim/2.
    half = D // 2
    theta = c.get("rope_parameters", {}).get("rope_theta", 100.0)
    inv = 1.0 / theta ** (np.arange(0, half, 2) / half)
    def tables(pos):
        f = pos[:, None] * inv[None, :]
        e = np.concatenate([f, f], axis=-1)
        return np.cos(e)[:, None, :], np.sin(e)[:, None, :]
    cx, sx = tables(xs.astype(np.float64))
    cy, sy = tables(ys.astype(np.float64))
    def rope(v):  # [n, heads, D]
        a, b = v[..., :half], v[..., half:]
        return np.concatenate([a * cx + _rotate_half(a) * sx, b * cy + _rotate_half(b) * sy], axis=-1)

    for l in range(c["num_hidden_layers"]):
        p = f"vision_tower.encoder.layers.{l}."
        a = _rms(h, t[p + "input_layernorm.weight"], eps)
        q = lin(p + "self_attn.q_proj", a).reshape(n, nh, D)
        kk = lin(p + "self_attn.k_proj", a).reshape(n, nkv, D)
        v = lin(p + "self_attn.v_proj", a).reshape(n, nkv, D)
        q = rope(_rms(q, t[p + "self_attn.q_norm.weight"], eps))
        kk = rope(_rms(kk, t[p + "self_attn.k_norm.weight"], eps))
        v = _rms(v, None, eps)
        o = np.empty((n, nh, D))
        for hd in range(nh):
            g = hd // (nh // nkv)
            s = q[:, hd, :] @ kk[:, g, :].T          # scaling 1.0, no mask (no padding)
            s = s - s.max(axis=1, keepdims=True)
            pr = np.exp(s)
            pr /= pr.sum(axis=1, keepdims=True)
            o[:, hd, :] = pr @ v[:, g, :]
        o = lin(p + "self_attn.o_proj", o.reshape(n, nh * D))
        h = h + _rms(o, t[p + "post_attention_layernorm.weight"], eps)
        m = _rms(h, t[p + "pre_feedforward_layernorm.weight"], eps)
        m = lin(p + "mlp.down_proj", _gelu_tanh(lin(p + "mlp.gate_proj", m)) * lin(p + "mlp.up_proj", m))
        h = h + _rms(m, t[p + "post_feedforward_layernorm.weight"], eps)

    # Pooler: average each k x k block of patches (blocks in row-major order), times sqrt(H).
    cell = xs // k + (pw // k) * (ys // k)
    pooled = np.zeros(((pw // k) * (ph // k), H))
    np.add.at(pooled, cell, h)
    pooled = pooled / (k * k) * math.sqrt(H)
    if c.get("standardize", False):
        pooled = (pooled - t["vision_tower.std_bias"]) * t["vision_tower.std_scale"]
    # Embedder: scale-free RMS norm, projection into the text model's width.
    return _rms(pooled, None, eps) @ t["embed_vision.embedding_projection.weight"].T
