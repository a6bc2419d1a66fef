#!/usr/bin/env python3
"""Independent float64 reference of the Gemma 4 text decoder, written from
shared/reference/gemma4-e2b-spec.md. Shares no code with the C++ engine: it reads the
safetensors files and config.json itself and evaluates the whole sequence at once with a
causal (and, on sliding layers, windowed) attention mask.

Usage as a module: logits = forward(load_checkpoint(dir), ids)   -> float64 [T, V]
Usage as a script: reference_forward.py DIR --ids 2,105,... --out FILE (float32 [T][V])
"""
import json
import os
import struct
import sys

import numpy as np


class _Stored:
    """One tensor inside a memory-mapped safetensors file, converted to float64 on use, so
    full-size checkpoints can be checked without a float64 copy of every weight."""

    def __init__(self, mm, begin, end, dtype, shape, where):
        self.mm, self.begin, self.end, self.dtype, self.shape, self.where = mm, begin, end, dtype, tuple(shape), where

    def _convert(self, raw):
        if self.dtype == "BF16":
            return (raw.view("<u2").astype(np.uint32) << 16).view("<f4").astype(np.float64)
        if self.dtype == "F16":
            return raw.view("<f2").astype(np.float64)
        if self.dtype == "F32":
            return raw.view("<f4").astype(np.float64)
        raise ValueError(f"{self.where}: dtype {self.dtype}")

    def _row_bytes(self):
        size = {"BF16": 2, "F16": 2, "F32": 4}[self.dtype]
        return size * int(np.prod(self.shape[1:], dtype=np.int64))

    def full(self):
        return self._convert(np.asarray(self.mm[self.begin:self.end])).reshape(self.shape)

    def rows(self, idx):
        rb = self._row_bytes()
        block = np.asarray(self.mm[self.begin:self.end]).reshape(self.shape[0], rb)
        return self._convert(np.ascontiguousarray(block[np.asarray(idx)])).reshape((len(idx),) + self.shape[1:])

    def apply_t(self, h, block=16384):
        """h @ W.T, converting W a block of rows at a time."""
        out = np.empty(h.shape[:-1] + (self.shape[0],))
        for r in range(0, self.shape[0], block):
            idx = np.arange(r, min(r + block, self.shape[0]))
            out[..., r:r + len(idx)] = h @ self.rows(idx).T
        return out


def read_safetensors(path):
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    (n,) = struct.unpack("<Q", bytes(mm[:8]))
    header = json.loads(bytes(mm[8:8 + n]))
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        out[name] = _Stored(mm, base + b, base + end, e["dtype"], e["shape"], f"{path}: {name}")
    return out


class _Weights(dict):
    """Small tensors come back as float64 arrays; big ones stay _Stored (see rows/apply_t)."""

    def __getitem__(self, name):
        t = dict.__getitem__(self, name)
        return t.full() if np.prod(t.shape, dtype=np.int64) < (1 << 26) else t


def load_checkpoint(directory):
    with open(os.path.join(directory, "config.json")) as f:
        cfg = json.load(f)
    text = cfg.get("text_config", cfg)
    index = os.path.join(directory, "model.safetensors.index.json")
    files = ["model.safetensors"]
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    raw = {}
    for fn in files:
        raw.update(read_safetensors(os.path.join(directory, fn)))
    weights = _Weights()
    for name, arr in raw.items():
        if name.startswith("model.language_model."):
            dict.__setitem__(weights, name[len("model.language_model."):], arr)
        elif name.startswith("model."):
            dict.__setitem__(weights, name[len("model."):], arr)
    return text, weights


def rms_norm(x, w=None, eps=1e-6):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y * w if w is not None else y


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def inv_freq(params, head_dim):
    theta = params["rope_theta"]
    factor = params.get("factor", 1.0)
    prf = params.get("partial_rotary_factor", 1.0)
    freqs = np.zeros(head_dim // 2)
    if params["rope_type"] == "default":
        assert prf == 1.0
        n = head_dim // 2
    elif params["rope_type"] == "proportional":
        n = int(prf * head_dim // 2)  # exponent keeps the full head_dim (spec 4.3)
    else:
        raise ValueError(params["rope_type"])
    i = np.arange(n)
    freqs[:n] = theta ** (-2.0 * i / head_dim)
    return freqs / factor


def rope(x, pos, freqs):
    """x: [T, heads, d]; rotate-half layout, component i pairs with i + d/2."""
    d = x.shape[-1]
    ang = pos[:, None].astype(np.float64) * freqs[None, :]          # [T, d/2]
    cos = np.concatenate([np.cos(ang), np.cos(ang)], axis=-1)[:, None, :]
    sin = np.concatenate([np.sin(ang), np.sin(ang)], axis=-1)[:, None, :]
    rot = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
    return x * cos + rot * sin


def rows(table, ids):
    return table.rows(ids) if isinstance(table, _Stored) else table[ids]


def linear(h, weight):
    """h @ weight.T for a float64 array or a lazily converted stored tensor."""
    return weight.apply_t(h) if isinstance(weight, _Stored) else h @ weight.T


def forward(checkpoint, ids, kv_f16=False, hidden=False, extras=None):
    """kv_f16: round K and V as ringlm's f16 KV cache stores them (saturate at +-65504, IEEE
    round to nearest even), to separate that storage rounding from every other error.
    hidden: return the final-normed hidden states [T, hidden_size] (the LM head's input)
    instead of the logits (serve's /v1/embeddings pools them).
    extras: a dict that receives "hidden" (the final-normed states [T, H]) and "kv" (per
    KV-owning layer, its K and V [T, kv_heads, d]), what a drafter reading the target needs."""
    c, W = checkpoint
    ids = np.asarray(ids, dtype=np.int64)
    T = len(ids)
    pos = np.arange(T)
    H = c["hidden_size"]
    L = c["num_hidden_layers"]
    nh = c["num_attention_heads"]
    nkv = c["num_key_value_heads"]
    eps = c.get("rms_norm_eps", 1e-6)
    P = c.get("hidden_size_per_layer_input", 256)
    types = c["layer_types"]
    n_shared = c.get("num_kv_shared_layers", 0)
    first_shared = L - n_shared
    window = c.get("sliding_window", 512)
    head_dim = {"sliding_attention": c.get("head_dim", 256), "full_attention": c.get("global_head_dim", 512)}
    freqs = {t: inv_freq(c["rope_parameters"][t], head_dim[t]) for t in set(types)}

    x = rows(W["embed_tokens.weight"], ids) * np.sqrt(H)
    if P:
        tok = rows(W["embed_tokens_per_layer.weight"], ids).reshape(T, L, P) * np.sqrt(P)
        ctx = (x @ W["per_layer_model_projection.weight"].T) * H ** -0.5
        ctx = rms_norm(ctx.reshape(T, L, P), W["per_layer_projection_norm.weight"], eps)
        ple = (ctx + tok) * 2 ** -0.5

    q_idx = pos[:, None]
    k_idx = pos[None, :]
    causal = k_idx <= q_idx
    # Additive masks: 0 where a key is visible, -inf elsewhere.
    masks = {"full_attention": np.where(causal, 0.0, -np.inf),
             "sliding_attention": np.where(causal & (q_idx - k_idx < window), 0.0, -np.inf)}

    kv_store = {}  # layer index -> (K, V) [T, nkv, d]
    h = x
    for l in range(L):
        p = f"layers.{l}."
        t = types[l]
        d = head_dim[t]
        a = rms_norm(h, W[p + "input_layernorm.weight"], eps)
        q = (a @ W[p + "self_attn.q_proj.weight"].T).reshape(T, nh, d)
        q = rope(rms_norm(q, W[p + "self_attn.q_norm.weight"], eps), pos, freqs[t])
        if l < first_shared:
            k = (a @ W[p + "self_attn.k_proj.weight"].T).reshape(T, nkv, d)
            k = rope(rms_norm(k, W[p + "self_attn.k_norm.weight"], eps), pos, freqs[t])
            v = rms_norm((a @ W[p + "self_attn.v_proj.weight"].T).reshape(T, nkv, d), None, eps)
            if kv_f16:
                k, v = (np.clip(x, -65504, 65504).astype(np.float16).astype(np.float64) for x in (k, v))
            kv_store[l] = (k, v)
        else:
            src = max(s for s in range(first_shared) if types[s] == t)
            k, v = kv_store[src]
        group = nh // nkv
        out = np.empty((T, nh, d))
        for hh in range(nh):
            kh = np.ascontiguousarray(k[:, hh // group, :])
            vh = np.ascontiguousarray(v[:, hh // group, :])
            # einsum's own loops beat Debian's reference BLAS here. Scale 1.0, no attention softcap.
            s = np.einsum("qd,kd->qk", np.ascontiguousarray(q[:, hh, :]), kh)
            s += masks[t]
            s -= s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(axis=-1, keepdims=True)
            out[:, hh, :] = np.einsum("qk,kd->qd", s, vh)
        o = out.reshape(T, nh * d) @ W[p + "self_attn.o_proj.weight"].T
        h = h + rms_norm(o, W[p + "post_attention_layernorm.weight"], eps)

        m = rms_norm(h, W[p + "pre_feedforward_layernorm.weight"], eps)
        m = (gelu(m @ W[p + "mlp.gate_proj.weight"].T) * (m @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
        h = h + rms_norm(m, W[p + "post_feedforward_layernorm.weight"], eps)

        if P:
            g = gelu(h @ W[p + "per_layer_input_gate.weight"].T) * ple[:, l, :]
            g = g @ W[p + "per_layer_projection.weight"].T
            h = h + rms_norm(g, W[p + "post_per_layer_input_norm.weight"], eps)
        h = h * W[p + "layer_scalar"].reshape(())

    h = rms_norm(h, W["norm.weight"], eps)
    if extras is not None:
        extras["hidden"], extras["kv"] = h, kv_store
    if hidden:
        return h
    head = W["embed_tokens.weight"] if c.get("tie_word_embeddings", True) else W["lm_head.weight"]
    logits = linear(h, head)
    cap = c.get("final_logit_softcapping")
    if cap:
        logits = cap * np.tanh(logits / cap)
    return logits


def main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--ids", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    ids = [int(s) for s in args.ids.split(",") if s]
    logits = forward(load_checkpoint(args.model), ids)
    logits.astype("<f4").tofile(args.out)
    for i, a in enumerate(logits.argmax(axis=-1)):
        print(f"{i}\t{a}")


if __name__ == "__main__":
    main(sys.argv[1:])
