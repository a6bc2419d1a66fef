#!/usr/bin/env python3
"""Broken checkpoints must fail with one line `ringlm: error: ...` naming the file and the
tensor (or config field), exit status 1, and never crash (no signal, no status 2)."""
import json
import os
import shutil
import struct
import subprocess
import sys

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_hostile")
os.makedirs(TMP, exist_ok=True)
BASE = os.path.join(TMP, "base")
subprocess.run([RINGLM, "make-test-model", BASE, "--preset", "tiny", "--seed", "5"], check=True, capture_output=True)
failures = []


def read_st(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]), data[8 + n:]


def write_st(path, header, body, header_len=None):
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text) if header_len is None else header_len))
        f.write(text)
        f.write(body)


def variant(name, mutate):
    d = os.path.join(TMP, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(BASE, d)
    st = os.path.join(d, "model.safetensors")
    header, body = read_st(st)
    mutate(d, st, header, body)
    return d


def expect_error(name, directory, *needles):
    r = subprocess.run([RINGLM, "logits", "--model", directory, "--ids", "2,5,6", "--out", os.path.join(TMP, "out.bin")],
                       capture_output=True, text=True)
    err = r.stderr.strip()
    ok = (r.returncode == 1 and err.startswith("ringlm: error: ") and "\n" not in err
          and all(n in err for n in needles))
    print(f"{'ok  ' if ok else 'FAIL'} {name}: exit={r.returncode} {err}")
    if not ok:
        failures.append(name)


L = "model.language_model."
Q = L + "layers.3.self_attn.q_proj.weight"


def drop(d, st, h, b):
    del h[Q]
    write_st(st, h, b)


def wrong_shape(d, st, h, b):
    s = h[Q]["shape"]
    h[Q]["shape"] = [s[1], s[0]]
    write_st(st, h, b)


def bad_dtype(d, st, h, b):
    h[Q]["dtype"] = "I16"
    write_st(st, h, b)


def f64_dtype(d, st, h, b):
    # Same byte count as 4 bf16 values is impossible to hit by accident: change shape too.
    s = h[Q]["shape"]
    h[Q]["dtype"] = "F64"
    h[Q]["shape"] = [s[0], s[1] // 4]
    write_st(st, h, b)


def truncated(d, st, h, b):
    write_st(st, h, b[: len(b) // 2])


def overlap(d, st, h, b):
    other = L + "layers.3.self_attn.o_proj.weight"
    start = h[other]["data_offsets"][0]
    size = h[Q]["data_offsets"][1] - h[Q]["data_offsets"][0]
    h[Q]["data_offsets"] = [start, start + size]
    write_st(st, h, b)


def past_end(d, st, h, b):
    size = h[Q]["data_offsets"][1] - h[Q]["data_offsets"][0]
    h[Q]["data_offsets"] = [len(b) - size // 2, len(b) - size // 2 + size]
    write_st(st, h, b)


def header_len_past_eof(d, st, h, b):
    write_st(st, h, b, header_len=10 ** 12)


def header_bad_json(d, st, h, b):
    text = b'{"a": [1, 2'
    with open(st, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b)


def tiny_file(d, st, h, b):
    open(st, "wb").write(b"\x01\x02")


def bad_config_json(d, st, h, b):
    open(os.path.join(d, "config.json"), "w").write('{"text_config": {')


def config_missing_field(d, st, h, b):
    cfg = json.load(open(os.path.join(d, "config.json")))
    del cfg["text_config"]["num_key_value_heads"]
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))


def config_bad_layer_type(d, st, h, b):
    cfg = json.load(open(os.path.join(d, "config.json")))
    cfg["text_config"]["layer_types"][2] = "chunked_attention"
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))


def shard_missing(d, st, h, b):
    json.dump({"weight_map": {Q: "model-00002-of-00002.safetensors"}}, open(os.path.join(d, "model.safetensors.index.json"), "w"))


NAN_BITS = {"F32": bytes.fromhex("0000c07f"), "BF16": bytes.fromhex("c07f"), "F16": bytes.fromhex("007e")}
INF_BITS = {"F32": bytes.fromhex("0000807f"), "BF16": bytes.fromhex("807f"), "F16": bytes.fromhex("007c")}


def poison(name, bits, element=0):
    """Overwrites one element of tensor `name` with NaN or Inf bits."""
    def mutate(d, st, h, b):
        t = h[name]
        pattern = bits[t["dtype"]]
        start = t["data_offsets"][0] + element * len(pattern)
        body = bytearray(b)
        body[start:start + len(pattern)] = pattern
        write_st(st, h, bytes(body))
    return mutate


expect_error("missing tensor", variant("missing", drop), "layers.3.self_attn.q_proj.weight", "missing tensor")
expect_error("wrong shape", variant("shape", wrong_shape), "model.safetensors", "layers.3.self_attn.q_proj.weight", "shape")
expect_error("unsupported dtype", variant("dtype", bad_dtype), "model.safetensors", "q_proj", "I16")
expect_error("F64 dtype", variant("f64", f64_dtype), "model.safetensors", "q_proj", "F64")
expect_error("truncated file", variant("truncated", truncated), "model.safetensors", "past the end")
expect_error("overlapping offsets", variant("overlap", overlap), "model.safetensors", "overlap")
expect_error("offsets past the end", variant("past_end", past_end), "model.safetensors", "q_proj", "past the end")
expect_error("header length past EOF", variant("hdr_len", header_len_past_eof), "model.safetensors", "header length")
expect_error("header bad JSON", variant("hdr_json", header_bad_json), "model.safetensors", "JSON")
expect_error("file shorter than 8 bytes", variant("short", tiny_file), "model.safetensors")
expect_error("config bad JSON", variant("cfg_json", bad_config_json), "config.json", "JSON")
expect_error("config missing field", variant("cfg_field", config_missing_field), "config.json", "num_key_value_heads")
expect_error("config bad layer type", variant("cfg_type", config_bad_layer_type), "config.json", "layer_types", "chunked_attention")
expect_error("index names a missing shard", variant("index", shard_missing), "model-00002-of-00002.safetensors")

# Numbers that are not numbers: refused at load, naming the tensor (before, they loaded and
# every logit was NaN: the model emitted <pad> forever).
expect_error("NaN in a norm", variant("nan_norm", poison(L + "layers.1.input_layernorm.weight", NAN_BITS, 3)),
             "model.safetensors", "layers.1.input_layernorm.weight", "element 3", "not a finite number")
expect_error("Inf in the final norm", variant("inf_norm", poison(L + "norm.weight", INF_BITS)), "norm.weight", "not a finite")
expect_error("NaN layer scalar", variant("nan_scalar", poison(L + "layers.0.layer_scalar", NAN_BITS)), "layers.0.layer_scalar")

if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("all hostile checkpoints rejected cleanly")
