#!/usr/bin/env python3
"""GGUF files with the block types ringlm added after the first GGUF reader (Q5_0, Q5_1, Q2_K,
Q3_K, IQ4_NL, IQ4_XS; docs/gguf.md), made from one tiny model, against the float64
reference over the same dequantized weights.

The tiny checkpoint is exported as an F32 GGUF by ringlm; for each type, this script rewrites
its layer matrices as blocks of that type, written here with random codes and scales sized
like the original weights (any bytes are valid blocks; tests/io/gguf_py.py decodes them, an
independent restatement of ggml's layouts). The metadata bytes are copied unchanged.

- `ringlm logits --activations f32 --kv-type f32 --weights stored` (the matrices decoded row
  by row, exact; the file's F32 matrices kept as they are): argmax 100 %, cosine >= 0.9999
  against reference_forward.py over the decoded weights.
- default activations: Q5_0, Q5_1, Q2_K, IQ4_NL are converted to Q8_0 at load, with a one-line
  note on stderr; Q3_K (q3kp16) and IQ4_XS (iq4xsp16) run on kernels of their own
  with no note. Cosine >= 0.999 and argmax agreement >= 0.9 (8-bit activations, and Q8_0's
  rounding for the converted ones), printed.
- bad input: a block with a NaN scale is refused at load naming the tensor, row and block; a
  tensor of a type ringlm cannot compute (TQ2_0) is refused naming tensor, type and file."""
import os
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "io"))
import gguf_py as g  # noqa: E402
import logits_cli  # noqa: E402
import reference_forward as ref  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_gguf_types")
os.makedirs(TMP, exist_ok=True)
failures = []
rng = np.random.default_rng(29)


def check(label, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {label} {detail}")
    if not ok:
        failures.append(label)


def kv_end(data):
    """Byte offset where the tensor infos start (after the metadata), and the counts."""
    r = g.Reader(data)
    r.p = 8
    n_t, n_kv = r.take("<Q"), r.take("<Q")
    for _ in range(n_kv):
        r.string()
        r.value(r.take("<I"))
    return r.p, n_t, n_kv


def rewrite(src, dst, tensors, align):
    """src's header and metadata bytes verbatim, then `tensors` [(name, type, ne, bytes)]."""
    data = open(src, "rb").read()
    end, _, n_kv = kv_end(data)
    out = bytearray(data[:8]) + struct.pack("<QQ", len(tensors), n_kv) + data[24:end]
    off = 0
    for name, t, ne, b in tensors:
        nb = name.encode()
        out += struct.pack("<Q", len(nb)) + nb + struct.pack("<I", len(ne))
        out += b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", t, off)
        off = (off + len(b) + align - 1) // align * align
    out += b"\0" * ((-len(out)) % align)
    for _, _, _, b in tensors:
        out += b + b"\0" * ((-len(b)) % align)
    open(dst, "wb").write(bytes(out))


def put16(b, col, vals):
    v = np.asarray(vals, np.float16).view(np.uint16)
    b[:, col] = v & 0xff
    b[:, col + 1] = v >> 8


def random_blocks(name, n_values, sigma):
    """Blocks of `name` with random codes whose decoded values have about this spread."""
    _, be, bb = g.TYPES[g.TYPE_ID[name]]
    nb = n_values // be
    b = rng.integers(0, 256, (nb, bb), dtype=np.uint16).astype(np.uint8)
    jitter = rng.uniform(0.7, 1.3, nb)
    if name == "Q5_0":
        put16(b, 0, sigma / 9.2 * jitter)
    elif name == "Q5_1":
        d = sigma / 9.2 * jitter
        put16(b, 0, d)
        put16(b, 2, -15.5 * d)
    elif name == "Q2_K":
        lo = rng.integers(1, 16, (nb, 16))
        b[:, 0:16] = (lo | (lo << 4)).astype(np.uint8)  # min = 1.5 x scale: centred codes
        d = sigma / (8.0 * 1.12) * jitter
        put16(b, 80, d)
        put16(b, 82, 1.5 * d)
    elif name == "Q3_K":
        put16(b, 108, sigma / (18.5 * 2.3) * jitter)
    elif name == "IQ4_NL":
        put16(b, 0, sigma / 68.0 * jitter)
    elif name == "IQ4_XS":
        put16(b, 0, sigma / (18.5 * 68.0) * jitter)
    return b.tobytes()


def canonical_names(stored, tensors):
    """GGUF name -> canonical name, matching the F32 GGUF's data against the checkpoint."""
    by_shape = {}
    for cname in stored:
        t = dict.__getitem__(stored, cname)
        by_shape.setdefault(tuple(t.shape), []).append(cname)
    out = {}
    for name, (t, ne, raw) in tensors.items():
        if t != 0:
            continue
        shape = tuple(reversed(ne))
        v = np.frombuffer(raw, np.float32).astype(np.float64).reshape(shape)
        for cname in by_shape.get(shape, []):
            if np.array_equal(dict.__getitem__(stored, cname).full(), v):
                out[name] = cname
                break
    return out


class _Overrides(ref._Weights):
    def __getitem__(self, name):
        t = dict.__getitem__(self, name)
        return t if isinstance(t, np.ndarray) else ref._Weights.__getitem__(self, name)


def main():
    hf = os.path.join(TMP, "hf")
    base = os.path.join(TMP, "f32.gguf")
    subprocess.run([RINGLM, "make-test-model", hf, "--preset", "tiny", "--seed", "4", "--dtype", "f32"], check=True,
                   capture_output=True)
    subprocess.run([RINGLM, "convert", "--model", hf, "--out", base, "--type", "f32"], check=True, capture_output=True)
    meta, tensors = g.read_gguf(base)
    align = meta.get("general.alignment", 32)
    order = list(tensors)
    c, stored = ref.load_checkpoint(hf)
    names = canonical_names(stored, tensors)
    layer = [n for n in order if n.startswith("blk.") and len(tensors[n][1]) == 2 and n in names]
    check("every layer matrix of the F32 GGUF matches a checkpoint tensor", len(layer) >= 7 * c["num_hidden_layers"] // 2,
          f"({len(layer)} matrices)")
    ids = [2] + list(np.random.default_rng(4).integers(0, c["vocab_size"], size=200 + 16 - 1))

    for name in ("Q5_0", "Q5_1", "Q2_K", "Q3_K", "IQ4_NL", "IQ4_XS"):
        t = g.TYPE_ID[name]
        be = g.TYPES[t][1]
        W = _Overrides()
        for cname in stored:
            dict.__setitem__(W, cname, dict.__getitem__(stored, cname))
        out, n = [], 0
        for tn in order:
            tt, ne, raw = tensors[tn]
            if tn in layer and ne[0] % be == 0:
                w = np.frombuffer(raw, np.float32)
                raw = random_blocks(name, w.size, float(w.std()))
                tt = t
                dec, _ = g.decode(t, raw, w.size)
                dict.__setitem__(W, names[tn], dec.reshape(tuple(reversed(ne))))
                n += 1
            out.append((tn, tt, ne, raw))
        path = os.path.join(TMP, f"tiny-{name}.gguf")
        rewrite(base, path, out, align)
        want = ref.forward((c, W), ids)
        got = logits_cli.run_logits(RINGLM, TMP, path, ids, 200, "--activations", "f32", "--kv-type", "f32",
                                   "--weights", "stored")
        cos, agree = logits_cli.cosine_and_argmax(got, want)
        check(f"{name}: {n} matrices (those with whole blocks per row), f32 activations vs float64 over the decoded weights",
              agree.all() and cos.min() >= 0.9999, f"argmax_agreement={agree.mean():.4f} min_cos={cos.min():.7f}")
        r = subprocess.run([RINGLM, "logits", "--model", path, "--ids-file", os.path.join(TMP, "ids.txt"), "--out",
                            os.path.join(TMP, "q8.bin"), "--decode-from", "200", "--weights", "stored"], capture_output=True,
                           text=True)
        got = np.fromfile(os.path.join(TMP, "q8.bin"), dtype="<f4").reshape(len(ids), -1).astype(np.float64)
        cos, agree = logits_cli.cosine_and_argmax(got, want)
        note = [line for line in r.stderr.splitlines() if "no fast kernel" in line]
        fast = name in ("Q3_K", "IQ4_XS")  # kernels of their own: no conversion, no note
        how = "own kernel, no Q8_0 conversion" if fast else "converted to Q8_0 at load, noted once on stderr"
        check(f"{name}: default activations ({how})",
              r.returncode == 0 and len(note) == (0 if fast else 1) and cos.mean() >= 0.999 and agree.mean() >= 0.9,
              f"mean_cos={cos.mean():.6f} argmax_agreement={agree.mean():.4f} | {note[0] if note else r.stderr[-300:] if not fast else ''}")

    # Bad input: a NaN scale in one block, and a type ringlm cannot compute.
    _, ne, raw = tensors[layer[0]]
    bad = bytearray(random_blocks("Q5_0", int(np.prod(ne)), 0.05))
    bad[22 * 3:22 * 3 + 2] = struct.pack("<H", 0x7e00)  # block 3's d = NaN
    out = [(tn, g.TYPE_ID["Q5_0"], tensors[tn][1], bytes(bad)) if tn == layer[0] else (tn,) + tensors[tn] for tn in order]
    path = os.path.join(TMP, "nan.gguf")
    rewrite(base, path, out, align)
    r = subprocess.run([RINGLM, "logits", "--model", path, "--ids", "2,3", "--out", os.path.join(TMP, "x.bin")],
                       capture_output=True, text=True)
    check("a NaN block scale is refused at load, naming the tensor and block",
          r.returncode != 0 and "block 3" in r.stderr and "NaN" in r.stderr, r.stderr.strip()[-200:])
    wide = next(tn for tn in layer if tensors[tn][1][0] % 256 == 0)  # whole TQ2_0 blocks per row
    out = [(tn, 35, tensors[tn][1], bytes(int(np.prod(tensors[tn][1])) // 256 * 66)) if tn == wide
           else (tn,) + tensors[tn] for tn in order]
    path = os.path.join(TMP, "tq2.gguf")
    rewrite(base, path, out, align)
    r = subprocess.run([RINGLM, "logits", "--model", path, "--ids", "2,3", "--out", os.path.join(TMP, "x.bin")],
                       capture_output=True, text=True)
    check("a tensor of an unsupported type is refused naming tensor, type and file",
          r.returncode != 0 and wide in r.stderr and "TQ2_0" in r.stderr and "tq2.gguf" in r.stderr,
          r.stderr.strip()[-200:])
    if failures:
        raise SystemExit(f"FAILED: {failures}")


if __name__ == "__main__":
    main()
