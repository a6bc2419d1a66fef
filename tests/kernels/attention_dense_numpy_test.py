"""The towers' dense attention (attend_dense on every ISA path this build and CPU have, via
tools/attention_dense_io) and the reference attend_one called as the vision tower called it
(every key at position 0) against float64 numpy on fresh random problems: query and key
counts off the 48-row query block and the 64-key tile, head groups 1-3, head_dim tails, the
vision tower's own shape (12 heads of 64 over a 27x21 patch grid), extreme scores, 1 and 2
threads.

Bound per (query, head) row:
    |out - exact| <= vmax * (2 * sqrt(d) * eps32 * A + 2 * sqrt(n_keys) * eps32 + 1e-6)
A = max over keys of scale * sum_i |q_i k_i| (a float32 dot of d terms loses about
sqrt(d) * eps * A; a softmax output moves at most 2 * vmax times the largest score error);
sqrt(n_keys) * eps for the float32 sums of p and p * v over the keys; 1e-6 for the exp."""
import os
import subprocess
import sys

import numpy as np

TOOL = os.path.join(os.environ["RINGLM_BUILD_DIR"], "tools", "attention_dense_io")
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_attention_dense_numpy")
os.makedirs(TMP, exist_ok=True)
EPS = float(np.finfo(np.float32).eps)
seed = int(np.random.default_rng().integers(1 << 31))  # fresh inputs every run
print("seed", seed)
rng = np.random.default_rng(seed)
failures = []


def exact(q, k, v, scale):
    """Softmax attention in float64: head h reads kv head h // (heads / kv heads)."""
    nq, nh, d = q.shape
    nkv = k.shape[1]
    kk = np.repeat(k.astype(np.float64), nh // nkv, axis=1)  # [keys][heads][d]
    vv = np.repeat(v.astype(np.float64), nh // nkv, axis=1)
    qq = q.astype(np.float64)
    s = scale * np.einsum("qhd,khd->hqk", qq, kk)
    a = scale * np.einsum("qhd,khd->hqk", np.abs(qq), np.abs(kk))
    w = np.exp(s - s.max(axis=2, keepdims=True))
    p = w / w.sum(axis=2, keepdims=True)
    out = np.einsum("hqk,khd->qhd", p, vv)
    vmax = np.abs(vv).max(axis=(0, 2))  # per head
    tol = vmax[None, :] * (2 * np.sqrt(d) * EPS * a.max(axis=2).T + 2 * np.sqrt(k.shape[0]) * EPS + 1e-6)
    return out, tol  # tol: [queries][heads]


def run(q, k, v, scale, threads):
    nq, nh, d = q.shape
    nk, nkv, _ = k.shape
    inp, outp = os.path.join(TMP, "in.bin"), os.path.join(TMP, "out.bin")
    with open(inp, "wb") as f:
        np.array([nq, nk, nh, nkv, d, threads], dtype="<i4").tofile(f)
        np.array([scale], dtype="<f4").tofile(f)
        for x in (q, k, v):
            x.astype("<f4").tofile(f)
    r = subprocess.run([TOOL, inp, outp], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"attention_dense_io failed: {r.stderr}")
    raw = open(outp, "rb").read()
    count = int(np.frombuffer(raw[:4], "<i4")[0])
    size = nq * nh * d * 4
    paths, off = {}, 4
    for _ in range(count):
        name = raw[off:off + 16].split(b"\0")[0].decode()
        paths[name] = np.frombuffer(raw[off + 16:off + 16 + size], "<f4").reshape(nq, nh, d)
        off += 16 + size
    return paths


CASES = [
    # label, (queries, keys, heads, kv heads, head_dim, query magnitude)
    ("one query, one key", (1, 1, 1, 1, 16, 1.0)),
    ("below a tile and a block", (5, 9, 2, 2, 64, 1.0)),
    ("odd sizes, group 2", (133, 133, 4, 2, 16, 1.0)),
    ("head_dim tail, group 3, keys > queries", (61, 197, 3, 1, 40, 1.0)),
    ("head_dim 7", (50, 77, 2, 2, 7, 1.0)),
    ("vision tower shape, 27x21 patches", (567, 567, 12, 12, 64, 1.0)),
    ("extreme scores", (95, 95, 4, 4, 64, 25.0)),
]

for label, (nq, nk, nh, nkv, d, mag) in CASES:
    q = (mag * rng.standard_normal((nq, nh, d))).astype(np.float32)
    k = rng.standard_normal((nk, nkv, d)).astype(np.float32)
    v = rng.standard_normal((nk, nkv, d)).astype(np.float32)
    scale = np.float32(1 / np.sqrt(d))
    want, tol = exact(q, k, v, float(scale))
    results = {}
    for threads in (1, 2):
        got = run(q, k, v, scale, threads)
        if len(got) < 2:
            failures.append(f"{label}: only {list(got)} paths ran")
        for name, y in got.items():
            if name != "reference" and name in results and not np.array_equal(results[name], y):
                failures.append(f"{label} [{name}]: 1 and 2 threads differ")
            results[name] = y
            err = np.abs(y.astype(np.float64) - want)
            bad = err > tol[:, :, None]
            ratio = float((err / tol[:, :, None]).max())
            status = "FAIL" if bad.any() else "ok  "
            print(f"{status} {label:40s} {name:11s} threads={threads} max_err={err.max():.3g} worst err/bound={ratio:.3f}")
            if bad.any():
                failures.append(f"{label} [{name}, {threads} threads]: {int(bad.sum())} values outside the bound")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("attend_dense matches float64 numpy on every path")
