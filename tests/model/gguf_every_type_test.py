#!/usr/bin/env python3
"""Issue #29's GGUF acceptance for every ggml type ringlm computes, on one tiny model (the
`make-test-model --preset tiny --seed 5` checkpoint the committed llama-quantize fixtures were
made from). gguf_published_test.py covers llama-quantize's mixed presets and gguf_types_test.py
the types ringlm reads but does not write (Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL, IQ4_XS); this adds:

1. The types ringlm writes (Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K; `ringlm convert --type`):
   `ringlm logits --activations f32 --kv-type f32 --weights stored` against float64
   (reference_forward.py) over the file's weights decoded by the independent numpy decoder
   (tests/io/gguf_py.py): argmax 100 %, min cosine >= 0.9999; the default path gated like
   gguf_published_test (mean cosine >= 0.999, argmax >= 90 %).
2. Google's official QAT Q4_0 GGUF layout: Q4_0 matrices beside an F16 token embedding table
   (and a variant with both embedding tables F16); the same gates.
3. The IQ2/IQ3/IQ1 codebook family, with tensors llama.cpp's llama-quantize wrote
   (tests/data/gguf/iq-llama-quantize.gguf: three matrices per preset, placed into an F32
   GGUF of the same model). Their float64 reference values are ringlm's dequantization of
   the same bytes *after* checking it hashes to llama.cpp's own (iq-llama-dequant.json), so
   the reference is llama.cpp's dequantization; the same gates, and the default path's
   conversion to Q8_0 is named once on stderr.
4. Bad input: for every quantized type, a NaN or infinite block scale (each fp16 field: d,
   dmin/m, IQ1_M's scale spread over its scale words), in a layer matrix or the token
   embedding table, is refused at load naming the file, the tensor and the row/block; a
   tensor whose type id ggml does not know, and one of each known type ringlm cannot compute
   (Q8_1, Q8_K, TQ1_0, TQ2_0, MXFP4, I16, I32, F64, and I8 without row scales), is refused
   naming the tensor, its type and the file."""
import hashlib
import json
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
from gguf_types_test import rewrite  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_gguf_every_type")
DATA = os.environ.get("RINGLM_TEST_DATA_DIR", os.path.join(HERE, "..", "data"))
TESTGEN = os.path.join(os.environ.get("RINGLM_BUILD_DIR", os.path.dirname(RINGLM)), "tools", "gguf_testgen")
os.makedirs(TMP, exist_ok=True)
failures = []
IDS = [2] + list(np.random.default_rng(5).integers(0, 768, size=96 + 8 - 1))
PREFILL = 96


def check(label, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {label} {detail}")
    if not ok:
        failures.append(label)


def canonical_names(path):
    """GGUF tensor name -> canonical (HF) name, from `ringlm inspect`'s table."""
    out = subprocess.run([RINGLM, "inspect", path], check=True, capture_output=True, text=True).stdout
    names = {}
    for line in out.splitlines():
        parts = line.split()
        if line.startswith("  ") and len(parts) >= 6 and parts[0].endswith(".weight") and parts[-1] != parts[0]:
            names[parts[0]] = parts[-1]
    return names


class _Arrays(ref._Weights):
    def __getitem__(self, name):
        return dict.__getitem__(self, name)


def reference_weights(path, known=None):
    """Canonical name -> float64 array of every tensor, decoded by gguf_py (or taken from
    `known`, GGUF name -> float64 values, for the codebook types gguf_py does not decode)."""
    _, tensors = g.read_gguf(path)
    names = canonical_names(path)
    W, types = _Arrays(), {}
    for gname, (t, ne, raw) in tensors.items():
        types[g.TYPES[t][0]] = types.get(g.TYPES[t][0], 0) + 1
        if gname not in names:
            continue
        v = known[gname] if known and gname in known else g.decode(t, raw, int(np.prod(ne)))[0]
        dict.__setitem__(W, names[gname], np.asarray(v, np.float64).reshape(tuple(reversed(ne))))
    return W, types


def config_of(path):
    c = json.loads(subprocess.run([RINGLM, "inspect", path, "--config"], check=True, capture_output=True,
                                  text=True).stdout)
    return c.get("text_config", c)


def gate(label, path, known=None, note=None):
    """The two gates of gguf_published_test on one file; `note` is a stderr substring the
    default path must print exactly once (a conversion notice), or None for none."""
    W, types = reference_weights(path, known)
    want = ref.forward((config_of(path), W), IDS)
    got = logits_cli.run_logits(RINGLM, TMP, path, IDS, PREFILL, "--activations", "f32", "--kv-type", "f32",
                               "--weights", "stored")
    cos, agree = logits_cli.cosine_and_argmax(got, want)
    check(f"{label} {dict(sorted(types.items()))}: f32 activations vs float64 over the file's weights",
          agree.all() and cos.min() >= 0.9999, f"argmax={agree.mean():.4f} min_cos={cos.min():.8f}")
    ids_file = os.path.join(TMP, "ids.txt")
    r = subprocess.run([RINGLM, "logits", "--model", path, "--ids-file", ids_file, "--out", os.path.join(TMP, "d.bin"),
                        "--decode-from", str(PREFILL), "--weights", "stored"], capture_output=True, text=True)
    ok = r.returncode == 0
    if ok:
        got = np.fromfile(os.path.join(TMP, "d.bin"), "<f4").reshape(len(IDS), -1).astype(np.float64)
        cos, agree = logits_cli.cosine_and_argmax(got, want)
        ok = cos.mean() >= 0.999 and agree.mean() >= 0.9
        notes = [line for line in r.stderr.splitlines() if "no fast kernel" in line]
        ok = ok and len(notes) == (0 if note is None else 1) and (note is None or note in notes[0])
    check(f"{label}: default activations", ok,
          f"mean_cos={cos.mean():.6f} argmax={agree.mean():.4f}" if r.returncode == 0 else r.stderr[-300:])
    return W


def written_types(hf):
    for t in ("q4_0", "q4_1", "q8_0", "q4_k", "q5_k", "q6_k"):
        path = os.path.join(TMP, f"tiny-{t}.gguf")
        subprocess.run([RINGLM, "convert", "--model", hf, "--out", path, "--type", t], check=True, capture_output=True)
        _, tensors = g.read_gguf(path)
        n = sum(1 for v in tensors.values() if g.TYPES[v[0]][0] == t.upper())
        # The tiny rows are 64-256 wide: the 256-value K blocks fit only the 256-wide matrices.
        check(f"convert --type {t}: {n} tensors of that type", n >= (9 if t.endswith("_k") else 70))
        gate(t.upper(), path)


def google_qat_layout(hf, f32):
    """ringlm's Q4_0 file with the embedding table(s) replaced by F16 copies of the checkpoint's
    (Google's QAT Q4_0 GGUFs keep token_embd in F16; the head is tied to it)."""
    q4 = os.path.join(TMP, "tiny-q4_0.gguf")
    meta, tensors = g.read_gguf(q4)
    _, full = g.read_gguf(f32)
    for tables in (("token_embd.weight",), ("token_embd.weight", "per_layer_token_embd.weight")):
        out = []
        for name, (t, ne, raw) in tensors.items():
            if name in tables:
                v = np.frombuffer(full[name][2], np.float32).astype(np.float16)
                t, raw = g.TYPE_ID["F16"], v.tobytes()
            out.append((name, t, ne, raw))
        path = os.path.join(TMP, f"qat-layout-{len(tables)}.gguf")
        rewrite(q4, path, out, meta.get("general.alignment", 32))
        shown = subprocess.run([RINGLM, "inspect", path], capture_output=True, text=True).stdout
        row = next((line.split() for line in shown.splitlines() if line.split()[:1] == ["token_embd.weight"]), [])
        check(f"Google QAT layout ({' + '.join(tables)} F16): inspect shows token_embd as F16", "F16" in row, str(row))
        gate(f"Google QAT Q4_0 layout, {len(tables)} table(s) F16", path)


def iq_family(f32):
    """Per llama-quantize preset of the fixture: its three matrices in the F32 file."""
    src = os.path.join(DATA, "gguf", "iq-llama-quantize.gguf")
    expect = json.load(open(os.path.join(DATA, "gguf", "iq-llama-dequant.json")))
    deq_path = os.path.join(TMP, "iq-dequant.gguf")
    subprocess.run([TESTGEN, "dequant", src, deq_path], check=True)
    _, raw = g.read_gguf(src)
    _, deq = g.read_gguf(deq_path)
    meta, base = g.read_gguf(f32)
    presets = sorted({n.split("/")[0] for n in raw})
    seen = set()
    for preset in presets:
        known, subst = {}, {}
        for name, (t, ne, b) in raw.items():
            if not name.startswith(preset + "/"):
                continue
            values = deq[name][2]
            same = hashlib.sha256(values).hexdigest() == expect[name]["sha256"]
            check(f"{name}: ringlm's dequantization hashes to llama.cpp's", same)
            gname = name.split("/", 1)[1]
            assert base[gname][1] == ne, (gname, base[gname][1], ne)
            subst[gname] = (t, b)
            known[gname] = np.frombuffer(values, np.float32).astype(np.float64)
            seen.add(g.TYPES[t][0])
        out = [(n, subst[n][0], ne, subst[n][1]) if n in subst else (n, t, ne, b) for n, (t, ne, b) in base.items()]
        path = os.path.join(TMP, f"tiny-{preset}.gguf")
        rewrite(f32, path, out, meta.get("general.alignment", 32))
        gate(f"llama-quantize {preset} tensors", path, known, note="Q8_0")
    check("every codebook type covered", seen == {"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"},
          str(sorted(seen)))


# fp16 scale fields per block (byte offsets): d, then dmin / m where the type has one. IQ1_M
# has no d field: its fp16 scale is the top nibbles of the four scale words at bytes 48..55.
SCALE_FIELDS = {"Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,), "Q2_K": (80, 82),
                "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,), "IQ4_NL": (0,), "IQ4_XS": (0,),
                "IQ2_XXS": (0,), "IQ2_XS": (0,), "IQ2_S": (0,), "IQ3_XXS": (0,), "IQ3_S": (0,), "IQ1_S": (0,),
                "IQ1_M": (None,)}
NOT_FINITE = (0x7e00, 0x7c00, 0xfc00, 0xfe01)  # NaN, +Inf, -Inf, -NaN with a payload


def put_scale(blk, field, h):
    if field is None:
        words = np.frombuffer(bytes(blk[48:56]), "<u2").copy()
        words = (words & 0x0fff) | (((h >> (4 * np.arange(4))) & 0xf) << 12).astype(np.uint16)
        blk[48:56] = np.frombuffer(words.astype("<u2").tobytes(), np.uint8)
    else:
        blk[field:field + 2] = np.frombuffer(struct.pack("<H", h), np.uint8)


def poisoned(name, n_values, field, h, block, rng):
    """Random blocks of `name` with every scale field finite (1/16), one field of one block `h`."""
    _, be, bb = g.TYPES[g.TYPE_ID[name]]
    b = rng.integers(0, 256, (n_values // be, bb), dtype=np.uint16).astype(np.uint8)
    for blk in b:
        for f in SCALE_FIELDS[name]:
            put_scale(blk, f, 0x2c00)
    put_scale(b[block], field, h)
    return b.tobytes()


def refused(label, path, *needles):
    r = subprocess.run([RINGLM, "logits", "--model", path, "--ids", "2,3", "--out", os.path.join(TMP, "x.bin")],
                       capture_output=True, text=True)
    err = r.stderr.strip()
    ok = r.returncode == 1 and err.startswith("ringlm: error: ") and "\n" not in err and all(n in err for n in needles)
    check(label, ok, err[-260:])


def bad_input(f32):
    meta, base = g.read_gguf(f32)
    align = meta.get("general.alignment", 32)
    names = canonical_names(f32)
    rng = np.random.default_rng(290)
    k = 0
    targets = [("blk.5.ffn_down.weight", t, f) for t in SCALE_FIELDS for f in SCALE_FIELDS[t]]
    targets.append(("token_embd.weight", "Q4_0", 0))
    for gname, tname, field in targets:
        ne = base[gname][1]
        be = g.TYPES[g.TYPE_ID[tname]][1]
        per_row, block = ne[0] // be, 13
        h = NOT_FINITE[k % len(NOT_FINITE)]
        k += 1
        raw = poisoned(tname, int(np.prod(ne)), field, h, block, rng)
        out = [(n, g.TYPE_ID[tname], e, raw) if n == gname else (n, t, e, b) for n, (t, e, b) in base.items()]
        path = os.path.join(TMP, f"bad-{gname.split('.')[0]}-{tname}-{field}.gguf")
        rewrite(f32, path, out, align)
        what = "d" if field in (0, 80, 108, 208, None) else "dmin/m"
        refused(f"{tname} {gname}: {what} = 0x{h:04x} in block {block} refused at load", path, path, names[gname],
                f"block scale of row {block // per_row} (block {block % per_row})", "not a finite number")
    gname = "blk.5.ffn_down.weight"
    ne = base[gname][1]
    unsupported = {99: None, 9: "Q8_1", 15: "Q8_K", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 25: "I16", 26: "I32",
                   28: "F64", 24: "I8"}
    for tid, tname in unsupported.items():
        be, bb = (256, 66) if tname is None else {"Q8_1": (32, 36), "Q8_K": (256, 292), "TQ1_0": (256, 54),
                                                  "TQ2_0": (256, 66), "MXFP4": (32, 17), "I16": (1, 2), "I32": (1, 4),
                                                  "F64": (1, 8), "I8": (1, 1)}[tname]
        raw = bytes(int(np.prod(ne)) // be * bb)
        out = [(n, tid, e, raw) if n == gname else (n, t, e, b) for n, (t, e, b) in base.items()]
        path = os.path.join(TMP, f"type-{tid}.gguf")
        rewrite(f32, path, out, align)
        tensor = names[gname] if tname == "I8" else gname  # the binder names tensors canonically
        refused(f"a tensor of type {tname or tid} refused naming tensor, type and file", path, path, tensor,
                tname or f"unknown ggml type {tid}")


def main():
    hf = os.path.join(TMP, "hf")
    f32 = os.path.join(TMP, "tiny-f32.gguf")
    subprocess.run([RINGLM, "make-test-model", hf, "--preset", "tiny", "--seed", "5", "--dtype", "f32"], check=True,
                   capture_output=True)
    subprocess.run([RINGLM, "convert", "--model", hf, "--out", f32, "--type", "f32"], check=True, capture_output=True)
    with open(os.path.join(TMP, "ids.txt"), "w") as f:
        f.write(",".join(map(str, IDS)))
    sections = sys.argv[1:] or ["written", "qat", "iq", "bad"]
    if "written" in sections or "qat" in sections:
        written_types(hf)
    if "qat" in sections:
        google_qat_layout(hf, f32)
    if "iq" in sections:
        iq_family(f32)
    if "bad" in sections:
        bad_input(f32)
    if failures:
        raise SystemExit(f"FAILED: {failures}")
    print("every type: all checks passed")


if __name__ == "__main__":
    main()
