"""Independent minimal GGUF reader/writer and float64 numpy decoders of the ggml block
formats, used by the tests to check ringlm's C++ implementation. Written from the format
description, sharing no code with src/."""
import struct

import numpy as np

# ggml type id -> (name, values per block, bytes per block)
TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 30: ("BF16", 1, 2), 8: ("Q8_0", 32, 34),
    2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210), 6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110), 20: ("IQ4_NL", 32, 18), 23: ("IQ4_XS", 256, 136),
    # Codebook formats: sizes only (read, not decoded here; iq_dequant_test.py compares ringlm
    # with llama.cpp's own dequantization instead).
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 22: ("IQ2_S", 256, 82), 18: ("IQ3_XXS", 256, 98),
    21: ("IQ3_S", 256, 110), 19: ("IQ1_S", 256, 50), 29: ("IQ1_M", 256, 56),
}
# IQ4_NL / IQ4_XS levels (ggml's kvalues_iq4nl).
IQ4_LEVELS = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.float32)
TYPE_ID = {v[0]: k for k, v in TYPES.items()}
SCALAR_FMT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.b = data
        self.p = 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p)[0]
        self.p += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.b[self.p:self.p + n]
        self.p += n
        return s.decode("utf-8", "replace")

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            return [self.value(et) for _ in range(n)]
        return self.take(SCALAR_FMT[t])


def read_gguf(path):
    """Returns (metadata dict, {name: (type, ne, bytes)})."""
    data = open(path, "rb").read()
    r = Reader(data)
    assert data[:4] == b"GGUF"
    r.p = 4
    version = r.take("<I")
    assert version in (2, 3)
    n_t, n_kv = r.take("<Q"), r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        k = r.string()
        meta[k] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_t):
        name = r.string()
        nd = r.take("<I")
        ne = [r.take("<Q") for _ in range(nd)]
        infos.append((name, ne, r.take("<I"), r.take("<Q")))
    align = meta.get("general.alignment", 32)
    start = (r.p + align - 1) // align * align
    tensors = {}
    for name, ne, t, off in infos:
        _, be, bb = TYPES[t]
        n = int(np.prod(ne))
        nbytes = n // be * bb
        assert off % align == 0
        tensors[name] = (t, ne, data[start + off:start + off + nbytes])
    return meta, tensors


def write_gguf(path, meta, tensors, align=32):
    """meta: {key: (type, value)} for scalars/strings; tensors: [(name, type, ne, bytes)]."""
    out = bytearray(b"GGUF") + struct.pack("<IQQ", 3, len(tensors), len(meta))
    for k, (t, v) in meta.items():
        kb = k.encode()
        out += struct.pack("<Q", len(kb)) + kb + struct.pack("<I", t)
        if t == 8:
            vb = v.encode()
            out += struct.pack("<Q", len(vb)) + vb
        else:
            out += struct.pack(SCALAR_FMT[t], v)
    off = 0
    offsets = []
    for name, t, ne, b in tensors:
        nb = name.encode()
        out += struct.pack("<Q", len(nb)) + nb + struct.pack("<I", len(ne))
        out += b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", t, off)
        offsets.append(off)
        off = (off + len(b) + align - 1) // align * align
    out += b"\0" * ((-len(out)) % align)
    for (_, _, _, b) in tensors:
        out += b + b"\0" * ((-len(b)) % align)
    open(path, "wb").write(bytes(out))


def f16(u16):
    return np.asarray(u16, dtype=np.uint16).view(np.float16).astype(np.float64)


def blocks(raw, nbytes):
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, nbytes)


def k_scales(sc):
    """(nb, 12) packed bytes -> (nb, 8) scales, (nb, 8) mins (6-bit each)."""
    sc = sc.astype(np.int64)
    s = np.zeros((sc.shape[0], 8), np.int64)
    m = np.zeros_like(s)
    s[:, :4] = sc[:, 0:4] & 63
    m[:, :4] = sc[:, 4:8] & 63
    s[:, 4:] = (sc[:, 8:12] & 15) | ((sc[:, 0:4] >> 6) << 4)
    m[:, 4:] = (sc[:, 8:12] >> 4) | ((sc[:, 4:8] >> 6) << 4)
    return s, m


def decode(t, raw, n):
    """Float64 values and float64 'magnitude' (sum of |terms|, for rounding tolerances)."""
    name = TYPES[t][0]
    if name == "F32":
        v = np.frombuffer(raw, np.float32).astype(np.float64)
        return v, np.abs(v)
    if name == "F16":
        v = np.frombuffer(raw, np.float16).astype(np.float64)
        return v, np.abs(v)
    if name == "BF16":
        with np.errstate(invalid="ignore"):
            v = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return v, np.abs(v)
    with np.errstate(invalid="ignore", over="ignore"):
        if name == "Q8_0":
            b = blocks(raw, 34)
            d = f16(b[:, 0] | (b[:, 1].astype(np.uint16) << 8))[:, None]
            q = b[:, 2:].view(np.int8).astype(np.float64)
            v = d * q
            return v.ravel(), np.abs(v).ravel()
        if name in ("Q4_0", "Q4_1"):
            bb = 18 if name == "Q4_0" else 20
            b = blocks(raw, bb)
            d = f16(b[:, 0] | (b[:, 1].astype(np.uint16) << 8))[:, None]
            qs = b[:, bb - 16:]
            q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.float64)
            if name == "Q4_0":
                v = d * (q - 8)
                return v.ravel(), np.abs(v).ravel()
            m = f16(b[:, 2] | (b[:, 3].astype(np.uint16) << 8))[:, None]
            v = d * q + m
            return v.ravel(), (np.abs(d * q) + np.abs(m)).ravel()
        if name in ("Q4_K", "Q5_K"):
            bb = 144 if name == "Q4_K" else 176
            b = blocks(raw, bb)
            d = f16(b[:, 0] | (b[:, 1].astype(np.uint16) << 8))[:, None]
            dmin = f16(b[:, 2] | (b[:, 3].astype(np.uint16) << 8))[:, None]
            s, m = k_scales(b[:, 4:16])
            qs = b[:, bb - 128:].reshape(-1, 4, 32)
            q = np.stack([qs & 15, qs >> 4], axis=2).reshape(-1, 8, 32).astype(np.int64)  # sub-block j
            if name == "Q5_K":
                qh = b[:, 16:48].astype(np.int64)  # (nb, 32)
                for j in range(8):
                    q[:, j, :] += ((qh >> j) & 1) * 16
            ds = (d * s)[:, :, None]
            ms = (dmin * m)[:, :, None]
            v = ds * q - ms
            return v.ravel(), (np.abs(ds * q) + np.abs(ms)).ravel()
        if name == "Q6_K":
            b = blocks(raw, 210)
            ql = b[:, 0:128].astype(np.int64)
            qh = b[:, 128:192].astype(np.int64)
            sc = b[:, 192:208].view(np.int8).astype(np.float64)
            d = f16(b[:, 208] | (b[:, 209].astype(np.uint16) << 8))[:, None]
            q = np.zeros((b.shape[0], 256), np.int64)
            for h in range(2):
                L, H = ql[:, 64 * h:64 * h + 64], qh[:, 32 * h:32 * h + 32]
                base = 128 * h
                q[:, base + 0:base + 32] = (L[:, :32] & 15) | (((H >> 0) & 3) << 4)
                q[:, base + 32:base + 64] = (L[:, 32:] & 15) | (((H >> 2) & 3) << 4)
                q[:, base + 64:base + 96] = (L[:, :32] >> 4) | (((H >> 4) & 3) << 4)
                q[:, base + 96:base + 128] = (L[:, 32:] >> 4) | (((H >> 6) & 3) << 4)
            ds = (d * sc)[:, np.arange(256) // 16]
            v = ds * (q - 32)
            return v.ravel(), np.abs(v).ravel()
    if name in MORE:
        v = MORE[name](raw)
        return v.astype(np.float64).ravel(), np.abs(v).astype(np.float64).ravel()
    raise ValueError(name)


# The types ringlm reads but does not write (Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL, IQ4_XS), decoded
# in float32 with one operation per step in ggml's order (scale product, multiply, subtract),
# so the results are the exact float32 values a correct decoder produces.
def f16_32(b, col):
    return (b[:, col] | (b[:, col + 1].astype(np.uint16) << 8)).view(np.float16).astype(np.float32)


def _q5(raw, bb):
    b = blocks(raw, bb)
    qh = b[:, bb - 20:bb - 16].copy().view("<u4").astype(np.int64)  # (nb, 1)
    qs = b[:, bb - 16:].astype(np.int64)
    low = np.concatenate([qs & 15, qs >> 4], axis=1)
    high = (qh >> np.arange(32)) & 1
    return b, (low | (high << 4))


def _dec_q5_0(raw):
    b, q = _q5(raw, 22)
    with np.errstate(invalid="ignore", over="ignore"):
        return (q - 16).astype(np.float32) * f16_32(b, 0)[:, None]


def _dec_q5_1(raw):
    b, q = _q5(raw, 24)
    with np.errstate(invalid="ignore", over="ignore"):
        return q.astype(np.float32) * f16_32(b, 0)[:, None] + f16_32(b, 2)[:, None]


def _two_bit(qs):
    """(nb, 64) bytes -> (nb, 256) 2-bit codes: value 128h + 32s + l is bits 2s.. of byte 32h + l."""
    qs = qs.astype(np.int64).reshape(-1, 2, 1, 32)
    return ((qs >> (2 * np.arange(4)[None, None, :, None])) & 3).reshape(-1, 256)


def _dec_q2_k(raw):
    b = blocks(raw, 84)
    sc = b[:, 0:16].astype(np.int64)
    q = _two_bit(b[:, 16:80])
    d, dmin = f16_32(b, 80)[:, None], f16_32(b, 82)[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        dl = (d * (sc & 15).astype(np.float32))[:, np.arange(256) // 16]
        ml = (dmin * (sc >> 4).astype(np.float32))[:, np.arange(256) // 16]
        return dl * q.astype(np.float32) - ml


def _dec_q3_k(raw):
    b = blocks(raw, 110)
    hm = b[:, 0:32].astype(np.int64)
    low = _two_bit(b[:, 32:96])
    v = np.arange(256)
    high = (hm[:, v % 32] >> (v // 32)) & 1
    q = low - 4 * (1 - high)
    p = b[:, 96:108].astype(np.int64)
    j = np.arange(16)
    lo4 = np.where(j < 8, p[:, j % 8] & 15, p[:, j % 8] >> 4)
    hi2 = (p[:, 8 + j % 4] >> (2 * (j // 4))) & 3
    s = (lo4 | (hi2 << 4)) - 32
    d = f16_32(b, 108)[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        dl = (d * s.astype(np.float32))[:, v // 16]
        return dl * q.astype(np.float32)


def _dec_iq4_nl(raw):
    b = blocks(raw, 18)
    qs = b[:, 2:].astype(np.int64)
    q = np.concatenate([qs & 15, qs >> 4], axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        return f16_32(b, 0)[:, None] * IQ4_LEVELS[q]


def _dec_iq4_xs(raw):
    b = blocks(raw, 136)
    sh = (b[:, 2] | (b[:, 3].astype(np.uint16) << 8)).astype(np.int64)[:, None]
    sl = b[:, 4:8].astype(np.int64)
    ib = np.arange(8)
    ls = ((sl[:, ib // 2] >> (4 * (ib % 2))) & 15) | (((sh >> (2 * ib)) & 3) << 4)
    qs = b[:, 8:].astype(np.int64).reshape(-1, 8, 16)
    q = np.concatenate([qs & 15, qs >> 4], axis=2)  # (nb, 8, 32)
    with np.errstate(invalid="ignore", over="ignore"):
        dl = f16_32(b, 0)[:, None] * (ls - 32).astype(np.float32)  # (nb, 8)
        return (dl[:, :, None] * IQ4_LEVELS[q]).reshape(-1, 256)


MORE = {"Q5_0": _dec_q5_0, "Q5_1": _dec_q5_1, "Q2_K": _dec_q2_k, "Q3_K": _dec_q3_k, "IQ4_NL": _dec_iq4_nl,
        "IQ4_XS": _dec_iq4_xs}
