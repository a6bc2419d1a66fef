#!/usr/bin/env python3
"""The Gemma 4 assistant (MTP drafter) step of model/assistant.h (via tools/assistant_io)
against an independent float64 numpy reference written from docs/speculative.md
("Assistant drafter"), on random tiny assistants written by `ringlm make-test-model
--assistant` (centroid head and dense head) and fresh random inputs each run: the
[target embedding, target hidden] input, a position, and random target K/V caches (the
sliding one longer than the window, so the window mask matters).

Per draw: logits cosine >= 0.99999 (issue #33's acceptance), same argmax, h_next cosine >=
0.99999. A self-check first makes sure the comparison can fail: the reference with the
layer scalars dropped must not pass."""
import json
import os
import struct
import subprocess
import sys

import numpy as np

RINGLM = os.environ["RINGLM"]
TOOL = os.path.join(os.environ["RINGLM_BUILD_DIR"], "tools", "assistant_io")
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_assistant_ref")
os.makedirs(TMP, exist_ok=True)


def load(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    raw = open(os.path.join(d, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    w = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        dt = {"BF16": "<u2", "F32": "<f4", "F16": "<f2", "I64": "<i8"}[v["dtype"]]
        a = np.frombuffer(raw[8 + n + b:8 + n + e], dtype=dt)
        if v["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view("<f4").astype(np.float64)
        elif v["dtype"] != "I64":
            a = a.astype(np.float64)
        w[k] = a.reshape(v["shape"])
    return cfg, w


def rms(v, w=None):
    r = v / np.sqrt((v * v).mean(-1, keepdims=True) + 1e-6)
    return r * w if w is not None else r


def gelu(v):
    return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))


def rope(q, p, d, theta, partial):
    half = d // 2
    i = np.arange(half)
    inv = np.where(i < int(partial * d // 2), theta ** (-2.0 * i / d), 0.0)
    c, s = np.cos(p * inv), np.sin(p * inv)
    x1, x2 = q[..., :half], q[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)


def reference(cfg, w, x, p, sliding, full, use_scalar=True):
    t = cfg["text_config"]
    nh, win = t["num_attention_heads"], t["sliding_window"]
    h = w["pre_projection.weight"] @ x
    for l, kind in enumerate(t["layer_types"]):
        pre = f"model.layers.{l}."
        is_sliding = kind == "sliding_attention"
        d = t["head_dim"] if is_sliding else t["global_head_dim"]
        q = (w[pre + "self_attn.q_proj.weight"] @ rms(h, w[pre + "input_layernorm.weight"])).reshape(nh, d)
        q = rms(q, w[pre + "self_attn.q_norm.weight"])
        q = rope(q, p, d, 1e4, 1.0) if is_sliding else rope(q, p, d, 1e6, 0.25)
        pos, k, v = sliding if is_sliding else full
        seen = (pos < p) & ((p - pos < win) if is_sliding else True)
        s = q @ k[seen].T
        pr = np.exp(s - s.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        h = h + rms(w[pre + "self_attn.o_proj.weight"] @ (pr @ v[seen]).reshape(-1), w[pre + "post_attention_layernorm.weight"])
        m = rms(h, w[pre + "pre_feedforward_layernorm.weight"])
        m = w[pre + "mlp.down_proj.weight"] @ (gelu(w[pre + "mlp.gate_proj.weight"] @ m) * (w[pre + "mlp.up_proj.weight"] @ m))
        h = h + rms(m, w[pre + "post_feedforward_layernorm.weight"])
        if use_scalar:
            h = h * w[pre + "layer_scalar"][0]
    f = rms(h, w["model.norm.weight"])
    emb = w["model.embed_tokens.weight"]
    if cfg["use_ordered_embeddings"]:
        c, k = cfg["num_centroids"], cfg["centroid_intermediate_top_k"]
        top = np.argsort(-(w["masked_embedding.centroids.weight"] @ f), kind="stable")[:k]
        cand = w["masked_embedding.token_ordering"].reshape(c, -1)[top].reshape(-1)
        vals = emb[cand] @ f
        logits = np.full(emb.shape[0], vals.min() - 1.0)
        logits[cand] = vals
    else:
        logits = emb @ f
    return logits, w["post_projection.weight"] @ f


def cos(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def draw(cfg, rng):
    t = cfg["text_config"]
    b = cfg["backbone_hidden_size"]
    p = int(rng.integers(t["sliding_window"] + 4, 4 * t["sliding_window"]))
    ns, nf = t["sliding_window"] + 4, p
    f32 = lambda *shape: rng.normal(0, 1, shape).astype("<f4")
    x = np.concatenate([f32(b) * 3, f32(b)])
    ks, vs, kf, vf = f32(ns, t["head_dim"]), f32(ns, t["head_dim"]), f32(nf, t["global_head_dim"]), f32(nf, t["global_head_dim"])
    path = os.path.join(TMP, "in.bin")
    with open(path, "wb") as fh:
        fh.write(struct.pack("<qii", p, ns, nf))
        for a in (x, ks, vs, kf, vf):
            fh.write(a.tobytes())
    d64 = lambda a: a.astype(np.float64)
    return path, d64(x), p, (np.arange(p - ns, p), d64(ks), d64(vs)), (np.arange(nf), d64(kf), d64(vf))


failures = []
seed = int.from_bytes(os.urandom(4), "little")
print(f"seed {seed}")
rng = np.random.default_rng(seed)
for preset in ("tiny", "tiny-dense"):
    model = os.path.join(TMP, preset)
    subprocess.run([RINGLM, "make-test-model", model, "--assistant", "--preset", preset,
                    "--seed", str(int(rng.integers(1, 1 << 30)))], check=True, capture_output=True)
    cfg, w = load(model)
    vocab = cfg["text_config"]["vocab_size"]
    for i in range(4):
        path, x, p, sl, fu = draw(cfg, rng)
        out = os.path.join(TMP, "out.bin")
        r = subprocess.run([TOOL, model, path, out], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"assistant_io failed: {r.stderr}")
        got = np.fromfile(out, "<f4").astype(np.float64)
        gl, gh = got[:vocab], got[vocab:]
        wl, wh = reference(cfg, w, x, p, sl, fu)
        c_l, c_h = cos(gl, wl), cos(gh, wh)
        ok = c_l >= 0.99999 and c_h >= 0.99999 and gl.argmax() == wl.argmax() and int(r.stdout) == wl.argmax()
        print(f"{preset} draw {i}: p={p} logits cos {c_l:.9f} h_next cos {c_h:.9f} argmax {gl.argmax()}/{wl.argmax()}"
              f" max|diff| {np.abs(gl - wl).max():.2e}{'' if ok else '  FAIL'}")
        if not ok:
            failures.append((preset, i))
        if preset == "tiny" and i == 0:  # the comparison can fail
            bl, bh = reference(cfg, w, x, p, sl, fu, use_scalar=False)
            if cos(gl, bl) >= 0.99999 and cos(gh, bh) >= 0.99999:
                failures.append("self-check: a reference without layer scalars also passed")


# One whole drafting round of engine::AssistantDrafter (tools/assistant_io --round) on the
# tiny target: the target's float64 reference (reference_forward.py) gives the final-normed
# hidden state of the last prompt row, its K/V and its next token t; the assistant reference
# then drafts K steps from [embed(t) * sqrt(B), h] at position n, reading the caches of the
# target's last sliding / full layers (picked here from the target's config: through KV
# sharing, the last owning layer of that kind), each step chaining the drafted token and
# h_next. The prompt is longer than the target's 80-slot sliding ring, so the ring wraps.
# A wiring self-check: the wrong hidden row or the wrong layer's cache must fail.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_forward as ref  # noqa: E402


def round_check(target, assistant, k, n):
    cfg, w = load(assistant)
    ck = ref.load_checkpoint(target)
    tc, tw = ck
    ids = [int(v) for v in rng.integers(3, tc["vocab_size"], n)]
    out = os.path.join(TMP, "round.bin")
    r = subprocess.run([TOOL, "--round", target, assistant, str(k), out] + [str(v) for v in ids],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"assistant_io --round failed: {r.stderr}")
    raw = np.fromfile(out, "<i4", 1 + k)
    t_got, drafts = int(raw[0]), [int(v) for v in raw[1:]]
    got = np.fromfile(out, "<f4", offset=4 * (1 + k)).astype(np.float64).reshape(k, -1)
    extras = {}
    logits = ref.forward(ck, ids, extras=extras)
    t = int(logits[-1].argmax())
    types = tc["layer_types"]
    first_shared = tc["num_hidden_layers"] - tc.get("num_kv_shared_layers", 0)

    def cache_of(kind):  # the cache the target's last layer of this kind reads
        last = max(l for l, ty in enumerate(types) if ty == kind)
        src = last if last < first_shared else max(l for l in range(first_shared) if types[l] == kind)
        kk, vv = extras["kv"][src]
        return np.arange(n), kk[:, 0, :], vv[:, 0, :]

    emb = tw["embed_tokens.weight"]
    scale = np.sqrt(tc["hidden_size"])

    def drafted(hidden, sliding, full):
        x = np.concatenate([emb[t] * scale, hidden])
        outs = []
        for j in range(k):
            lg, hn = reference(cfg, w, x, n, sliding, full)
            outs.append(lg)
            x = np.concatenate([emb[drafts[j]] * scale, hn])  # chain what the drafter drafted
        return outs

    want = drafted(extras["hidden"][-1], cache_of("sliding_attention"), cache_of("full_attention"))
    bad = []
    ok = t_got == t
    for j in range(k):
        c = cos(got[j], want[j])
        ok_j = c >= 0.99999 and int(want[j].argmax()) == drafts[j]
        print(f"round step {j}: logits cos {c:.9f} draft {drafts[j]}/{int(want[j].argmax())}{'' if ok_j else '  FAIL'}")
        ok = ok and ok_j
    if not ok:
        bad.append(f"round: t {t_got}/{t}")
    # The comparison can fail: the row before (p - 2) or the first sliding layer's cache.
    wrong_row = drafted(extras["hidden"][-2], cache_of("sliding_attention"), cache_of("full_attention"))
    kk, vv = extras["kv"][types.index("sliding_attention")]
    wrong_kv = drafted(extras["hidden"][-1], (np.arange(n), kk[:, 0, :], vv[:, 0, :]), cache_of("full_attention"))
    for name, alt in (("hidden row p-2", wrong_row), ("first sliding layer's KV", wrong_kv)):
        if all(cos(got[j], alt[j]) >= 0.99999 for j in range(k)):
            bad.append(f"self-check: the round also matches with the {name}")
    return bad


target = os.path.join(TMP, "target-tiny")
subprocess.run([RINGLM, "make-test-model", target, "--preset", "tiny", "--seed", str(int(rng.integers(1, 1 << 30)))],
               check=True, capture_output=True)
for preset in ("tiny", "tiny-dense"):
    failures += round_check(target, os.path.join(TMP, preset), 4, 100)
if failures:
    raise SystemExit(f"FAILED: {failures}")
print("ok")
