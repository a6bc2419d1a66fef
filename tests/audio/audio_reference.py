#!/usr/bin/env python3
"""Independent float64 reference of Gemma 4's audio feature extractor and audio tower,
written from the published architecture (transformers' Gemma4AudioFeatureExtractor,
Gemma4AudioModel and Gemma4MultimodalEmbedder). Shares no code with the C++ in src/audio,
and follows transformers' own formulation where the C++ takes a shortcut: the waveform is
padded to a multiple of 128 samples with a frame mask, the convolutions run over every frame
with the mask applied, and attention is computed blockwise (12-token blocks, 24-token
context windows, the Transformer-XL relative shift) with the padding + sliding-window mask;
the padding tokens are dropped at the end, as Gemma4Model does.

  feats, mask = log_mel(wave_float32, fe)   -> float32 [frames, 128], bool [frames]
  emb = encode(load_tower(dir), feats, mask) -> float64 [tokens, text_hidden]
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
                if k.startswith("model.audio_tower.") or k.startswith("model.embed_audio."):
                    tensors[k[len("model."):]] = v
    return {"config": cfg["audio_config"], "t": tensors}


def load_extractor(model_dir):
    proc = json.load(open(os.path.join(model_dir, "processor_config.json")))
    return proc["feature_extractor"]


# ---- feature extractor ----------------------------------------------------------------

def _hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + f / 700.0)


def _mel_to_hz(m):
    return 700.0 * (np.power(10, m / 2595.0) - 1.0)


def mel_filter_bank(n_bins, n_mels, fmin, fmax, sr):
    """HTK mel triangles without normalization, [n_bins, n_mels] float64."""
    pts = _mel_to_hz(np.linspace(_hz_to_mel(fmin), _hz_to_mel(fmax), n_mels + 2))
    fft_freqs = np.linspace(0, sr // 2, n_bins)
    diff = np.diff(pts)
    slopes = pts[None, :] - fft_freqs[:, None]
    down = -slopes[:, :-2] / diff[:-1]
    up = slopes[:, 2:] / diff[1:]
    return np.maximum(0.0, np.minimum(down, up))


def log_mel(wave, fe, max_length=480000, pad_to=128):
    """The extractor on one clip: truncate to max_length, right-pad to a multiple of pad_to
    (mask 0), semicausal left padding, frames of frame_length + 1 every hop, Hann window,
    |rfft|, mel, log(mel + mel_floor); frames whose window reaches the padding are masked
    and zeroed. Returns float32 [frames, mels] and the bool mask."""
    sr = fe.get("sampling_rate", 16000)
    frame = int(round(sr * fe.get("frame_length_ms", 20.0) / 1000.0))
    hop = int(round(sr * fe.get("hop_length_ms", 10.0) / 1000.0))
    n_fft = 2 ** math.ceil(math.log2(frame))
    if fe.get("fft_overdrive", False):
        n_fft *= 2
    n_mels = fe.get("feature_size", 128)
    pre = fe.get("preemphasis", 0.0)
    scale = fe.get("input_scale_factor", 1.0)
    floor = fe.get("mel_floor", 1e-3)

    w = np.asarray(wave, dtype=np.float32)[:max_length]
    n = len(w)
    total = ((n + pad_to - 1) // pad_to) * pad_to
    w = np.concatenate([w, np.zeros(total - n, np.float32)])
    attn = np.concatenate([np.ones(n, np.int64), np.zeros(total - n, np.int64)])
    if scale != 1.0:
        w = w * scale
    w = np.concatenate([np.zeros(frame // 2, np.float32), w])
    attn = np.concatenate([np.zeros(frame // 2, np.int64), attn])
    size = frame + 1
    count = (len(w) - size) // hop + 1
    idx = np.arange(count)[:, None] * hop + np.arange(size)[None, :]
    fr = w[idx]                                                # [frames, frame + 1] float32
    if pre > 0.0:
        if fe.get("preemphasis_htk_flavor", True):
            fr = np.concatenate([fr[:, :1] * (1.0 - pre), fr[:, 1:-1] - pre * fr[:, :-2]], axis=1)
        else:
            fr = fr[:, 1:] - pre * fr[:, :-1]
    else:
        fr = fr[:, :-1]
    hann = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(frame) / frame)).astype(np.float32)
    fr = fr * hann                                             # float32 x float32, as numpy does
    mag = np.abs(np.fft.rfft(fr.astype(np.float64), n=n_fft, axis=-1))
    mel = mag @ mel_filter_bank(n_fft // 2 + 1, n_mels, fe.get("min_frequency", 0.0),
                                fe.get("max_frequency", 8000.0), sr)
    out = np.log(mel + floor)
    if fe.get("per_bin_mean") is not None:
        out = out - np.asarray(fe["per_bin_mean"])[None, :]
    if fe.get("per_bin_stddev") is not None:
        out = out / np.asarray(fe["per_bin_stddev"])[None, :]
    mask = attn[np.arange(count) * hop + size - 1].astype(bool)
    return (out.astype(np.float32) * mask[:, None]), mask


# ---- tower ----------------------------------------------------------------------------

def _rms(x, w=None, eps=1e-6):
    y = x * np.power(np.mean(x * x, axis=-1, keepdims=True) + eps, -0.5)
    return y * w if w is not None else y


def _silu(x):
    return x / (1.0 + np.exp(-x))


def _conv_block(x, mask, w, norm, eps):
    """x [C, T, F] (masked along T) -> Conv2d(3x3, stride 2, pad 1) -> LayerNorm(C) -> ReLU."""
    x = x * mask[None, :, None]
    c, t, f = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    to, fo = (t + 2 - 3) // 2 + 1, (f + 2 - 3) // 2 + 1
    out = np.zeros((w.shape[0], to, fo))
    for kt in range(3):
        for kf in range(3):
            patch = xp[:, kt:kt + 2 * to:2, kf:kf + 2 * fo:2]        # [C, To, Fo]
            out += np.einsum("oc,ctf->otf", w[:, :, kt, kf], patch)
    y = out.transpose(1, 2, 0)                                       # LayerNorm over channels
    mu = y.mean(-1, keepdims=True)
    var = ((y - mu) ** 2).mean(-1, keepdims=True)
    y = (y - mu) / np.sqrt(var + eps) * norm
    return np.maximum(y, 0.0).transpose(2, 0, 1), mask[::2]


def encode(tower, feats, mask):
    c, t = tower["config"], tower["t"]
    H, nh = c["hidden_size"], c["num_attention_heads"]
    D = H // nh
    eps = c.get("rms_norm_eps", 1e-6)
    clipped = c.get("use_clipped_linears", True)
    gc = c.get("gradient_clipping", 1e10)
    chunk, left, right = c["attention_chunk_size"], c["attention_context_left"], c["attention_context_right"]
    cap = c["attention_logit_cap"]
    invalid = c.get("attention_invalid_logits_value", -1e9)
    rw = c.get("residual_weight", 0.5)

    def lin(name, x):
        if clipped:
            x = np.clip(x, t[name + ".input_min"], t[name + ".input_max"])
        y = x @ t[name + ".linear.weight"].T
        if clipped:
            y = np.clip(y, t[name + ".output_min"], t[name + ".output_max"])
        return y

    s = "audio_tower.subsample_conv_projection."
    x, m = _conv_block(np.asarray(feats, np.float64)[None], mask, t[s + "layer0.conv.weight"],
                       t[s + "layer0.norm.weight"], eps)
    x, m = _conv_block(x, m, t[s + "layer1.conv.weight"], t[s + "layer1.norm.weight"], eps)
    x = x.transpose(1, 2, 0).reshape(x.shape[1], -1)               # [T, F * C]
    h = x @ t[s + "input_proj_linear.weight"].T
    S = h.shape[0]

    # Relative positions 12..0 as transformers lays them out: [sin | cos].
    half = H // 2
    inv = np.exp(np.arange(half) * -(math.log(10000.0) / max(half - 1, 1)))
    pos = np.arange(12, -1, -1)[:, None] * inv[None, :]
    pe = np.concatenate([np.sin(pos), np.cos(pos)], axis=-1)        # [13, H]

    # The mask: key valid, and 0 <= q - k < left - 1 (sliding window, no future), blocked.
    past, future = left - 1, right
    ctx = chunk + past + future
    nb = (S + chunk - 1) // chunk
    qi = np.arange(S)[:, None]
    ki = np.arange(S)[None, :]
    dist = qi - ki
    m4 = m[None, :] & (((dist >= 0) & (dist < past)) | ((dist < 0) & (-dist < future)))
    m4 = np.pad(m4, ((0, nb * chunk - S), (0, nb * chunk - S)))
    m4 = np.pad(m4.reshape(nb, chunk, nb * chunk), ((0, 0), (0, 0), (past, future)))
    kv_idx = np.arange(nb)[:, None] * chunk + np.arange(ctx)[None, :]
    m5 = np.take_along_axis(m4, kv_idx[:, None, :].repeat(chunk, 1), axis=2)   # [nb, chunk, ctx]

    def blocks_of(v):  # [S, nh, D] -> [nb, chunk, nh, D]
        return np.pad(v, ((0, nb * chunk - S), (0, 0), (0, 0))).reshape(nb, chunk, nh, D)

    def context_of(v):  # [S, nh, D] -> [nb, ctx, nh, D]
        vp = np.pad(v, ((past, future + chunk - 1), (0, 0), (0, 0)))
        return np.stack([vp[b * chunk:b * chunk + ctx] for b in range(nb)])

    def ffw(p, x):
        r = x
        x = _rms(np.clip(x, -gc, gc), t[p + "pre_layer_norm.weight"])
        x = lin(p + "ffw_layer_2", _silu(lin(p + "ffw_layer_1", x)))
        x = _rms(np.clip(x, -gc, gc), t[p + "post_layer_norm.weight"])
        return r + rw * x

    for l in range(c["num_hidden_layers"]):
        p = f"audio_tower.layers.{l}."
        h = ffw(p + "feed_forward1.", h)
        r = h
        a = _rms(np.clip(h, -gc, gc), t[p + "norm_pre_attn.weight"])
        q = lin(p + "self_attn.q_proj", a).reshape(S, nh, D)
        k = lin(p + "self_attn.k_proj", a).reshape(S, nh, D)
        v = lin(p + "self_attn.v_proj", a).reshape(S, nh, D)
        softplus = np.log1p(np.exp(t[p + "self_attn.per_dim_scale"]))
        q = q * (D ** -0.5 / math.log(2)) * softplus
        k = k * (math.log(1 + math.e) / math.log(2))
        qb, kb, vb = blocks_of(q), context_of(k), context_of(v)
        ac = np.einsum("bihd,bjhd->hbij", qb, kb)                           # [nh, nb, chunk, ctx]
        relk = (pe @ t[p + "self_attn.relative_k_proj.weight"].T).reshape(13, nh, D)
        bd = np.einsum("bihd,phd->hbip", qb, relk)                          # [nh, nb, chunk, 13]
        # Transformer-XL shift: pad to ctx + 1 columns, flatten, cut, reshape.
        bd = np.pad(bd, ((0, 0), (0, 0), (0, 0), (0, ctx + 1 - 13)))
        bd = bd.reshape(nh, nb, chunk * (ctx + 1))[..., :chunk * ctx].reshape(nh, nb, chunk, ctx)
        logits = np.tanh((ac + bd) / cap) * cap
        logits = np.where(m5[None], logits, invalid)
        logits = logits - logits.max(-1, keepdims=True)
        pr = np.exp(logits)
        pr /= pr.sum(-1, keepdims=True)
        o = np.einsum("hbij,bjhd->bihd", pr, vb).reshape(nb * chunk, H)[:S]
        o = lin(p + "self_attn.post", o)
        h = r + _rms(np.clip(o, -gc, gc), t[p + "norm_post_attn.weight"])

        # Light convolution.
        r = h
        g = lin(p + "lconv1d.linear_start", _rms(h, t[p + "lconv1d.pre_layer_norm.weight"], eps))
        g = g[:, :H] * (1.0 / (1.0 + np.exp(-g[:, H:])))
        kw = t[p + "lconv1d.depthwise_conv1d.weight"][:, 0, :]              # [H, K]
        K = kw.shape[1]
        gp = np.pad(g, ((K - 1, 0), (0, 0)))
        y = sum(gp[j:j + S] * kw[:, j][None, :] for j in range(K))
        y = _silu(_rms(np.clip(y, -gc, gc), t[p + "lconv1d.conv_norm.weight"], eps))
        h = r + lin(p + "lconv1d.linear_end", y)

        h = ffw(p + "feed_forward2.", h)
        h = _rms(np.clip(h, -gc, gc), t[p + "norm_out.weight"])

    h = h @ t["audio_tower.output_proj.weight"].T + t["audio_tower.output_proj.bias"]
    h = h[m]                                                   # drop the padding tokens
    return _rms(h, None, eps) @ t["embed_audio.embedding_projection.weight"].T
