"""ringlm's scalar (de)quantization and GGUF reader/writer against an independent float64
numpy decoder (gguf_py.py):
 1. ringlm quantizes random rows (magnitudes 1e-6 .. 3e4, outliers, zero and one-signed
    blocks) to every type and writes a GGUF: the blocks decoded here must equal ringlm's
    dequantization (to float32 rounding) and stay within each type's error bound.
 2. Random raw blocks written here (fp16 scales including 0, subnormals, 65504, negative,
    inf, NaN) are read and dequantized by ringlm: results must match the decoder here."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import gguf_py as g  # noqa: E402

tool = os.path.join(os.environ["RINGLM_BUILD_DIR"], "tools", "gguf_testgen")
tmp = os.environ["RINGLM_TMP"]
os.makedirs(tmp, exist_ok=True)
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def same(cpp, ref, mag, what):
    """float32 results of ringlm vs float64 reference: equal up to a few float32 roundings."""
    with np.errstate(invalid="ignore"):
        cpp = cpp.astype(np.float64)
    both_nan = np.isnan(cpp) & np.isnan(ref)
    inf_ok = np.isinf(ref) & (cpp == ref)
    with np.errstate(invalid="ignore"):
        close = np.abs(cpp - ref) <= 4e-7 * mag + 1e-45
    ok = both_nan | inf_ok | close
    if not ok.all():
        i = int(np.argmin(ok))
        check(False, f"{what}: element {i}: ringlm {cpp[i]!r} vs numpy {ref[i]!r} ({(~ok).sum()} mismatches)")


def error_bound(name, x):
    """Largest |x - dequant(quant(x))| ringlm's quantizers may produce, per element."""
    tiny = 2.0 ** -24  # fp16 scale spacing near zero (subnormals)
    if name == "F32":
        return np.zeros_like(x)
    if name == "F16":
        return np.abs(x) * 2.0 ** -11 + tiny
    if name == "BF16":
        return np.abs(x) * 2.0 ** -8
    be = 32 if name in ("Q8_0", "Q4_0", "Q4_1") else 256
    xb = x.reshape(-1, be)
    if name == "Q8_0":
        b = np.abs(xb).max(1) / 254 * 1.002 + 128 * tiny
    elif name == "Q4_0":
        b = np.abs(xb).max(1) / 8 * 1.002 + 16 * tiny
    elif name == "Q4_1":
        b = (xb.max(1) - xb.min(1)) / 30 * 1.002 + np.abs(xb.min(1)) * 2.0 ** -10 + 16 * tiny
    elif name in ("Q4_K", "Q5_K"):
        levels = 15 if name == "Q4_K" else 31
        sub = xb.reshape(-1, 8, 32)
        lo = np.minimum(sub.min(2), 0)
        rng = (sub.max(2) - lo).max(1)
        mins = (-lo).max(1)
        b = 0.5 * rng / levels * (1 + 1 / 63) * 1.01 + 0.5 * mins / 63 * 1.01 + 64 * tiny
    elif name == "Q6_K":
        amax = np.abs(xb).max(1)
        b = amax * (1 / 64 + 16.5 / (32 * 127)) * 1.01 + 64 * tiny
    return np.repeat(b, be)


# ---- 1. ringlm quantizers + writer, decoded here --------------------------------------
for seed in (1, 2):
    path = os.path.join(tmp, f"quantized{seed}.gguf")
    subprocess.run([tool, "quantize", path, str(seed)], check=True)
    meta, tensors = g.read_gguf(path)
    check(meta.get("general.architecture") == "ringlm-test", "metadata round trip")
    for name in ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q5_K", "Q6_K"):
        src = np.frombuffer(tensors["src." + name][2], np.float32).astype(np.float64)
        t, ne, raw = tensors["q." + name]
        check(g.TYPES[t][0] == name, f"type of q.{name} is {t}")
        ref, mag = g.decode(t, raw, len(src))
        deq = np.frombuffer(tensors["deq." + name][2], np.float32)
        same(deq, ref, mag, f"seed {seed} {name}: ringlm dequant vs numpy")
        err = np.abs(ref - src)
        bound = error_bound(name, src)
        bad = err > bound
        if bad.any():
            i = int(np.argmax(bad))
            check(False, f"seed {seed} {name}: quantization error {err[i]:.3g} > bound {bound[i]:.3g} at {i} (x={src[i]!r})")
        # The quantizers must be useful, not just bounded: relative RMS error per row.
        rows = src.reshape(ne[1], ne[0])
        rel = np.sqrt(((ref.reshape(rows.shape) - rows) ** 2).mean(1)) / np.sqrt((rows ** 2).mean(1))
        # (Outliers of 40 sigma in every block make these larger than on real weights.)
        limit = {"F32": 0, "F16": 1e-3, "BF16": 5e-3, "Q8_0": 0.02, "Q4_0": 0.2, "Q4_1": 0.16,
                 "Q4_K": 0.16, "Q5_K": 0.08, "Q6_K": 0.05}[name]
        # Row 0 (1e-6) is dominated by fp16 scale precision; check the others.
        check((rel[1:] <= limit).all(), f"seed {seed} {name}: relative RMS errors {rel} above {limit}")
        print(f"seed {seed} {name:5s}: max err/bound {np.max(err / np.maximum(bound, 1e-300)):.3f}, rel RMS {rel[1:].max():.4f}")

# ---- 2. raw blocks written here, read and dequantized by ringlm -----------------------
rng = np.random.default_rng(7)
special = np.array([0x0000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0xfbff, 0x8001, 0xbc00,
                    0x7c00, 0xfc00, 0x7e00], np.uint16)  # 0, subnormals, 1, max, -max, inf, NaN


def scales(n):
    s = rng.integers(0, 0x7c00, n, dtype=np.uint16) | (rng.integers(0, 2, n, dtype=np.uint16) << 15)
    s[: len(special)] = special[: n]
    s[rng.random(n) < 0.2] = rng.choice(special, int((rng.random(n) < 0.2).sum()) or 1)[0]
    return s


def put16(b, col, vals):
    b[:, col] = vals & 0xff
    b[:, col + 1] = vals >> 8


tensors = []
nblk = 64
for name in ("Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q5_K", "Q6_K"):
    t = g.TYPE_ID[name]
    _, be, bb = g.TYPES[t]
    b = rng.integers(0, 256, (nblk, bb), dtype=np.uint16).astype(np.uint8)
    if name == "Q6_K":
        put16(b, 208, scales(nblk))
    else:
        put16(b, 0, scales(nblk))
        if name in ("Q4_1", "Q4_K", "Q5_K"):
            put16(b, 2, np.roll(scales(nblk), 5))
    tensors.append(("raw." + name, t, [be * 8, nblk // 8], b.tobytes()))
# The types ringlm reads but does not write: raw blocks with random codes and scales (specials
# included); their fp16 fields sit at: Q5_0 d@0; Q5_1 d@0 m@2; Q2_K d@80 dmin@82; Q3_K d@108;
# IQ4_NL d@0; IQ4_XS d@0. Checked bit for bit below.
MORE_F16 = {"Q5_0": (0,), "Q5_1": (0, 2), "Q2_K": (80, 82), "Q3_K": (108,), "IQ4_NL": (0,), "IQ4_XS": (0,)}
for name, cols in MORE_F16.items():
    t = g.TYPE_ID[name]
    _, be, bb = g.TYPES[t]
    b = rng.integers(0, 256, (nblk, bb), dtype=np.uint16).astype(np.uint8)
    for k, col in enumerate(cols):
        put16(b, col, np.roll(scales(nblk), 5 * k))
    tensors.append(("raw." + name, t, [be * 8, nblk // 8], b.tobytes()))
# 16-bit floats with every exponent, and F32 with specials.
tensors.append(("raw.F16", 1, [256, 4], rng.integers(0, 65536, 1024, dtype=np.uint16).astype("<u2").tobytes()))
tensors.append(("raw.BF16", 30, [256, 4], rng.integers(0, 65536, 1024, dtype=np.uint16).astype("<u2").tobytes()))
f32 = rng.standard_normal(256).astype(np.float32)
f32[:4] = [np.inf, -np.inf, 3.4e38, 1e-45]
tensors.append(("raw.F32", 0, [256], f32.tobytes()))
raw_path = os.path.join(tmp, "raw.gguf")
out_path = os.path.join(tmp, "raw_deq.gguf")
g.write_gguf(raw_path, {"general.alignment": (4, 64)}, tensors, align=64)
subprocess.run([tool, "dequant", raw_path, out_path], check=True)
_, deq = g.read_gguf(out_path)
for name, t, ne, raw in tensors:
    ref, mag = g.decode(t, raw, int(np.prod(ne)))
    cpp = np.frombuffer(deq[name][2], np.float32)
    check(deq[name][1] == ne, f"{name}: shape {deq[name][1]} != {ne}")
    same(cpp, ref, mag, f"raw blocks {name}")
    if name[4:] in MORE_F16:  # bit-exact: same float32 operations as ggml's decoder
        want = g.MORE[name[4:]](raw).astype(np.float32).ravel()
        exact = (cpp.view(np.uint32) == want.view(np.uint32)) | (np.isnan(cpp) & np.isnan(want))
        check(exact.all(), f"raw blocks {name}: {int((~exact).sum())} values not bit-identical to numpy's float32 decode")
    print(f"raw {name:6s}: {len(ref)} values, {np.isnan(ref).sum()} NaN, {np.isinf(ref).sum()} inf: ok")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all dequantization checks passed")
