"""Numbers that are not numbers in a GGUF file, and GGUF files in every model command.

A NaN block scale in a quantized matrix, a NaN norm weight, or a NaN/Inf `rope.freq_base`
must be refused at load with one `ringlm: error:` line naming the file and the tensor or key
(before, such files loaded and generated <pad> forever). `tokenize`, `detokenize`, `template`
and `logits` accept a GGUF file where they accept a model directory (before: "invalid JSON" /
"config.json: cannot open").

Env: RINGLM, RINGLM_TMP (set by CTest).
"""
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_py import read_gguf, TYPE_ID  # noqa: E402

RINGLM = os.environ["RINGLM"]
TMP = os.environ["RINGLM_TMP"]
os.makedirs(TMP, exist_ok=True)
base_dir = os.path.join(TMP, "tiny")
base = os.path.join(TMP, "tiny.gguf")
subprocess.run([RINGLM, "make-test-model", base_dir, "--preset", "tiny", "--seed", "3"], check=True, capture_output=True)
subprocess.run([RINGLM, "export-gguf", base_dir, base, "--type", "q4_0"], check=True, capture_output=True)
data = open(base, "rb").read()
meta, tensors = read_gguf(base)
failures = []


def run(*args):
    return subprocess.run([RINGLM, *args], capture_output=True, text=True, encoding="utf-8")


def expect_error(name, blob, *needles):
    path = os.path.join(TMP, name + ".gguf")
    open(path, "wb").write(blob)
    r = run("logits", "--model", path, "--ids", "2,5,6", "--out", os.path.join(TMP, "out.bin"))
    err = r.stderr.strip()
    ok = r.returncode == 1 and err.startswith("ringlm: error: ") and "\n" not in err and all(n in err for n in needles)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: exit={r.returncode} {err}")
    if not ok:
        failures.append(name)


def patch(offset, new):
    b = bytearray(data)
    b[offset:offset + len(new)] = new
    return bytes(b)


def tensor_offset(name):
    raw = tensors[name][2]
    at = data.find(raw)
    assert at > 0 and data.find(raw, at + 1) < 0, name
    return at


# A NaN scale in block 5 of a Q4_0 matrix (18-byte blocks, fp16 scale first).
q = "blk.1.attn_q.weight"
assert tensors[q][0] == TYPE_ID["Q4_0"], tensors[q][0]
# Errors name tensors by their canonical (Hugging Face) names, as every binder error does.
expect_error("nan_block_scale", patch(tensor_offset(q) + 5 * 18, b"\x00\x7e"), "nan_block_scale.gguf",
             "layers.1.self_attn.q_proj.weight", "block scale of row 2 (block 1)", "not a finite number")
# Inf in a norm vector (F32).
n = "blk.0.attn_norm.weight"
assert tensors[n][0] == TYPE_ID["F32"], tensors[n][0]
expect_error("inf_norm", patch(tensor_offset(n) + 4 * 7, struct.pack("<f", float("inf"))),
             "layers.0.input_layernorm.weight", "element 7")
# NaN / Inf metadata: the f32 value right after the key and its type (6 = FLOAT32).
for key, value in (("rope.freq_base", float("nan")), ("attention.layer_norm_rms_epsilon", float("inf"))):
    tag = key.encode() + struct.pack("<I", 6)
    at = data.find(tag)
    assert at > 0 and data.find(tag, at + 1) < 0, key
    expect_error("bad_" + key.split(".")[-1], patch(at + len(tag), struct.pack("<f", value)), key, "not a finite number")

# The valid file works in the commands that used to want a directory.
r = run("tokenize", "--model", base, "--text", "hello world")
if r.returncode != 0 or not json.loads(r.stdout):
    failures.append("tokenize"), print("FAIL tokenize:", r.returncode, r.stderr.strip())
else:
    ids = json.loads(r.stdout)
    ids = ids["ids"] if isinstance(ids, dict) else ids
    r2 = run("detokenize", "--model", base, "--ids", ",".join(map(str, ids)))
    ref = run("tokenize", "--model", base_dir, "--text", "hello world")
    if r2.returncode != 0 or "hello world" not in r2.stdout or ref.stdout != r.stdout:
        failures.append("detokenize"), print("FAIL detokenize:", r2.returncode, r2.stdout, r2.stderr.strip())
msgs = os.path.join(TMP, "msgs.json")
json.dump({"messages": [{"role": "user", "content": "hi"}]}, open(msgs, "w"))
r = run("template", "--model", base, "--messages", msgs, "--add-generation-prompt")
ref = run("template", "--model", base_dir, "--messages", msgs, "--add-generation-prompt")
if r.returncode != 0 or r.stdout != ref.stdout:
    failures.append("template"), print("FAIL template:", r.returncode, r.stderr.strip(), r.stdout[:200], ref.stdout[:200])
r = run("logits", "--model", base, "--ids", "2,5,6", "--out", os.path.join(TMP, "ok.bin"))
if r.returncode != 0 or os.path.getsize(os.path.join(TMP, "ok.bin")) == 0:
    failures.append("logits"), print("FAIL logits:", r.returncode, r.stderr.strip())

if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("all non-numbers refused; GGUF accepted by tokenize, detokenize, template, logits")
