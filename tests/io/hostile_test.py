"""Hostile GGUF files: each malformed file must make `ringlm inspect` fail with exit code 1
and a one-line `ringlm: error:` naming the file and the fault — no crash, no sanitizer
report, no hang. `--write-corpus DIR` also saves every case (and a valid file) as fuzzer seeds."""
import os
import struct
import subprocess
import sys

U32, U64 = "<I", "<Q"


def s(text):
    b = text.encode() if isinstance(text, str) else text
    return struct.pack(U64, len(b)) + b


def kv(key, vtype, payload):
    return s(key) + struct.pack(U32, vtype) + payload


def tinfo(name, ne, gtype, offset):
    return s(name) + struct.pack(U32, len(ne)) + b"".join(struct.pack(U64, d) for d in ne) + struct.pack("<IQ", gtype, offset)


def gguf(kvs=(), tensors=(), data=b"", version=3, n_kv=None, n_t=None, align=32, pad=True):
    head = b"GGUF" + struct.pack(U32, version)
    head += struct.pack(U64, len(tensors) if n_t is None else n_t)
    head += struct.pack(U64, len(kvs) if n_kv is None else n_kv)
    body = head + b"".join(kvs) + b"".join(tensors)
    if pad:
        body += b"\0" * ((-len(body)) % align)
    return body + data


ARCH = kv("general.architecture", 8, s("gemma4"))
F32_4 = tinfo("a.weight", [4], 0, 0)
valid = gguf([ARCH], [F32_4, tinfo("b.weight", [32, 2], 8, 32)], struct.pack("<4f", 1, 2, 3, 4) + b"\0" * 16 + b"\1" * 68)

cases = [
    # (name, bytes, expected substring of the error)
    ("empty", b"", "not a GGUF file"),
    ("bad_magic", b"GGUG" + valid[4:], "not a GGUF file"),
    ("version1", gguf([ARCH], version=1), "version 1 is not supported"),
    ("big_endian", b"GGUF" + struct.pack(">I", 3) + valid[8:], "big-endian"),
    ("version99", gguf([ARCH], version=99), "unsupported GGUF version 99"),
    ("truncated_header", valid[:12], "truncated at byte 8"),
    ("kv_count_2^64", gguf([ARCH], n_kv=2**64 - 1), "declares 18446744073709551615 metadata entries"),
    ("tensor_count_2^63", gguf([ARCH], n_t=2**63), "declares 9223372036854775808 tensors"),
    ("key_length_2^64", gguf([struct.pack(U64, 2**64 - 1) + b"x" * 16]), "string length 18446744073709551615 runs past the end"),
    ("string_value_past_end", gguf([kv("k", 8, struct.pack(U64, 1000) + b"abc")], pad=False), "metadata key 'k' at byte 37: string length 1000"),
    ("unknown_value_type", gguf([kv("k", 99, b"\0" * 8)]), "unknown metadata value type 99"),
    ("array_count_2^62", gguf([kv("k", 9, struct.pack("<IQ", 4, 2**62))]), "array of 4611686018427387904 u32 elements does not fit"),
    ("string_array_count_huge", gguf([kv("k", 9, struct.pack("<IQ", 8, 2**60) + s("a"))]), "array of 1152921504606846976 string elements"),
    ("string_in_array_past_end", gguf([kv("k", 9, struct.pack("<IQ", 8, 2) + s("a") + struct.pack(U64, 2**40))], pad=False), "string length 1099511627776"),
    ("nested_depth_100", gguf([kv("k", 9, struct.pack("<IQ", 9, 1) * 100 + struct.pack("<IQ", 4, 0))]), "nested deeper than 8"),
    ("duplicate_key", gguf([ARCH, ARCH]), "'general.architecture' at byte 70 appears twice"),
    ("empty_key", gguf([kv("", 4, struct.pack(U32, 1))]), "has an empty key"),
    ("bool_value_7", gguf([kv("k", 7, b"\7")]), "bool value 7"),
    ("alignment_zero", gguf([kv("general.alignment", 4, struct.pack(U32, 0))]), "'general.alignment' at byte 24 is 0, not a power of two"),
    ("alignment_3", gguf([kv("general.alignment", 4, struct.pack(U32, 3))]), "is 3, not a power of two"),
    ("alignment_string", gguf([kv("general.alignment", 8, s("32"))]), "has type string, expected u32"),
    ("n_dims_5", gguf([ARCH], [tinfo("t", [1, 1, 1, 1, 1], 0, 0)], b"\0" * 32), "tensor 't' (info at byte 70): has 5 dimensions"),
    ("n_dims_0", gguf([ARCH], [tinfo("t", [], 0, 0)], b"\0" * 32), "has 0 dimensions"),
    ("zero_dim", gguf([ARCH], [tinfo("t", [4, 0], 0, 0)], b"\0" * 32), "dimension 1 is zero"),
    ("dim_2^63", gguf([ARCH], [tinfo("t", [2**63], 0, 0)], b"\0" * 32), "element count overflows"),
    ("numel_overflow", gguf([ARCH], [tinfo("t", [2**32, 2**32], 0, 0)], b"\0" * 32), "element count overflows (dimension 1"),
    ("nbytes_overflow", gguf([ARCH], [tinfo("t", [2**62], 1, 0)], b"\0" * 32), "data size overflows"),
    ("unknown_tensor_type", gguf([ARCH], [tinfo("t", [4], 77, 0)], b"\0" * 32), "unknown ggml type 77"),
    ("not_block_multiple", gguf([ARCH], [tinfo("t", [33], 2, 0)], b"\0" * 64), "first dimension 33 is not a multiple of the Q4_0 block size 32"),
    ("misaligned_offset", gguf([ARCH], [tinfo("t", [4], 0, 4)], b"\0" * 64), "data offset 4 (at byte"),
    ("offset_past_end", gguf([ARCH], [tinfo("t", [4], 0, 2**40)], b"\0" * 64), "runs past the end of the data section"),
    ("offset_2^64", gguf([ARCH], [tinfo("t", [8], 0, 2**64 - 32)], b"\0" * 64), "runs past the end of the data section"),
    ("data_past_end", gguf([ARCH], [tinfo("t", [64], 0, 0)], b"\0" * 100), "data [0, +256) runs past the end"),
    ("overlapping", gguf([ARCH], [tinfo("t1", [16], 0, 0), tinfo("t2", [16], 0, 32)], b"\0" * 128), "tensor 't2' data at offset 32 overlaps tensor 't1'"),
    ("duplicate_tensor", gguf([ARCH], [F32_4, F32_4], b"\0" * 64), "a tensor of this name appears twice"),
    ("name_64_bytes", gguf([ARCH], [tinfo("n" * 64, [4], 0, 0)], b"\0" * 64), "name is 64 bytes long"),
    ("name_length_huge", gguf([ARCH], [struct.pack(U64, 2**63) + b"xx"], pad=False), "name of tensor 0 at byte 70: string length"),
    ("data_section_past_end", gguf([ARCH], [F32_4], pad=False), "data section would start at byte"),
]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--write-corpus":
        os.makedirs(sys.argv[2], exist_ok=True)
        for name, data, _ in cases + [("valid", valid, "")]:
            open(os.path.join(sys.argv[2], name + ".gguf"), "wb").write(data)
        return 0
    ringlm = os.environ["RINGLM"]
    tmp = os.environ["RINGLM_TMP"]
    os.makedirs(tmp, exist_ok=True)
    failures = 0
    vpath = os.path.join(tmp, "valid.gguf")
    open(vpath, "wb").write(valid)
    r = subprocess.run([ringlm, "inspect", vpath], capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or "b.weight" not in r.stdout or "Q8_0" not in r.stdout:
        print("FAIL valid file:", r.returncode, r.stdout, r.stderr)
        failures += 1
    for name, data, expected in cases:
        path = os.path.join(tmp, name + ".gguf")
        open(path, "wb").write(data)
        r = subprocess.run([ringlm, "inspect", path], capture_output=True, text=True, timeout=60)
        err = r.stderr.strip()
        ok = (r.returncode == 1 and err.startswith("ringlm: error: " + path) and expected in err
              and len(err.splitlines()) == 1 and "Sanitizer" not in err and "runtime error" not in err)
        print(("ok   " if ok else "FAIL ") + f"{name}: rc={r.returncode} {err}")
        failures += not ok
    print(f"{len(cases)} hostile files, {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
