#!/usr/bin/env python3
"""The towers in their two converted forms: a llama.cpp mmproj GGUF (`convert --mmproj-out`,
read with `--mmproj`) and a packed directory's towers.rlpk (`convert --out DIR`).

Checks, on make-test-model's tiny towers (both towers, every branch of each encoder):
  - the mmproj file, read by the independent GGUF reader tests/io/gguf_py.py, has llama.cpp's
    metadata keys and tensor names (clip.vision.projector_type gemma4v, v.blk.N.attn_q.weight,
    a.blk.N.conv_pw1.weight, ...), its types (matrices f16 / bf16 / q8_0; norms, clip bounds,
    position table and audio convolutions f32) and layouts (the patch embedding as a conv2d
    kernel [H, 3, p, p], the audio per_dim_scale stored as softplus), against the
    checkpoint's safetensors values;
  - `ringlm encode` gives the same soft tokens from every form as from the Hugging Face
    directory: cosine per soft token >= 0.99999 for f16 and bf16 (measured 1.0: the test
    checkpoint is bf16, which these values survive in f16) and >= 0.999 for q8_0 (measured
    ~0.99994);
  - truncated and corrupt files are refused with errors naming the file and the tensor or key;
  - inspect shows the towers of each form and says plainly when a model has none;
  - `run --model text.gguf --mmproj towers.gguf --image` works end to end, also with a Q4_K
    text file beside a BF16 mmproj; the demo text model as Google's QAT Q4_0 layout, Q4_K, Q3_K
    and IQ4_XS, each beside an F16 and a BF16 mmproj (the pairings the uploads publish)."""
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "io"))
import gguf_py  # noqa: E402
import vision_reference as vref  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "model"))
import gguf_types_test as gtypes  # noqa: E402  (its GGUF rewriting helpers)

RINGLM = os.environ["RINGLM"]
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_mmproj_test")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def ringlm(*args, ok=True):
    p = subprocess.run([RINGLM, *args], capture_output=True, text=True, errors="replace")
    if ok and p.returncode != 0:
        raise SystemExit(f"ringlm {' '.join(args)} failed ({p.returncode}):\n{p.stderr}")
    return p


def path(name):
    return os.path.join(TMP, name)


HF = path("tiny")
ringlm("make-test-model", HF, "--preset", "tiny", "--seed", "5")
forms = {}
for t in ("f16", "bf16", "q8_0"):
    ringlm("convert", "--model", HF, "--mmproj-out", path(f"mmproj-{t}.gguf"), "--tower-type", t)
    forms[f"mmproj {t}"] = ["--mmproj", path(f"mmproj-{t}.gguf")]
    ringlm("convert", "--model", HF, "--out", path(f"packed-{t}"), "--tower-type", t)
    forms[f"packed {t}"] = ["--model", path(f"packed-{t}")]
    check(os.path.exists(path(f"packed-{t}/towers.rlpk")), f"packed {t}: towers.rlpk written")

# ---- the mmproj file as llama.cpp reads it -------------------------------------------------
hf = {}
for f in sorted(os.listdir(HF)):
    if f.endswith(".safetensors"):
        hf.update(vref._read_safetensors(os.path.join(HF, f)))
cfg = json.load(open(os.path.join(HF, "config.json")))
vc, ac = cfg["vision_config"], cfg["audio_config"]

# llama.cpp's names (tools/mtmd/clip-impl.h, gguf-py's tensor map), written out by hand here.
V_LAYER = {"input_layernorm.weight": "ln1.weight", "post_attention_layernorm.weight": "attn_post_norm.weight",
           "pre_feedforward_layernorm.weight": "ln2.weight", "post_feedforward_layernorm.weight": "ffn_post_norm.weight",
           "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight"}
V_LIN = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
         "self_attn.o_proj": "attn_out", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
A_LAYER = {"feed_forward1.pre_layer_norm.weight": "ffn_norm.weight",
           "feed_forward1.post_layer_norm.weight": "ffn_post_norm.weight",
           "feed_forward2.pre_layer_norm.weight": "ffn_norm_1.weight",
           "feed_forward2.post_layer_norm.weight": "ffn_post_norm_1.weight",
           "norm_pre_attn.weight": "attn_pre_norm.weight", "norm_post_attn.weight": "attn_post_norm.weight",
           "norm_out.weight": "ln2.weight", "self_attn.relative_k_proj.weight": "attn_k_rel.weight",
           "self_attn.per_dim_scale": "per_dim_scale.weight", "lconv1d.pre_layer_norm.weight": "conv_norm.weight",
           "lconv1d.conv_norm.weight": "norm_conv.weight", "lconv1d.depthwise_conv1d.weight": "conv_dw.weight"}
A_LIN = {"feed_forward1.ffw_layer_1": "ffn_up", "feed_forward1.ffw_layer_2": "ffn_down",
         "feed_forward2.ffw_layer_1": "ffn_up_1", "feed_forward2.ffw_layer_2": "ffn_down_1",
         "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
         "self_attn.post": "attn_out", "lconv1d.linear_start": "conv_pw1", "lconv1d.linear_end": "conv_pw2"}
GLOBAL = {"vision_tower.patch_embedder.input_proj.weight": "v.patch_embd.weight",
          "vision_tower.patch_embedder.position_embedding_table": "v.position_embd.weight",
          "vision_tower.std_bias": "v.std_bias", "vision_tower.std_scale": "v.std_scale",
          "embed_vision.embedding_projection.weight": "mm.input_projection.weight",
          "audio_tower.subsample_conv_projection.layer0.conv.weight": "a.conv1d.0.weight",
          "audio_tower.subsample_conv_projection.layer0.norm.weight": "a.conv1d.0.norm.weight",
          "audio_tower.subsample_conv_projection.layer1.conv.weight": "a.conv1d.1.weight",
          "audio_tower.subsample_conv_projection.layer1.norm.weight": "a.conv1d.1.norm.weight",
          "audio_tower.subsample_conv_projection.input_proj_linear.weight": "a.input_projection.weight",
          "audio_tower.output_proj.weight": "a.pre_encode.out.weight",
          "audio_tower.output_proj.bias": "a.pre_encode.out.bias",
          "embed_audio.embedding_projection.weight": "mm.a.input_projection.weight"}


def text_variants(demo, q4_0, q4_k):
    """(file, kind) of the demo model's text in the layouts users bring: Google's QAT Q4_0 (F16
    token embedding table), ringlm's Q4_K, and Q3_K / IQ4_XS (random blocks of the type in every
    matrix with whole 256-value blocks per row, as gguf_types_test writes them)."""
    f16 = path("text-f16.gguf")
    ringlm("convert", "--model", demo, "--out", f16, "--type", "f16")
    meta, full = gguf_py.read_gguf(f16)
    _, q4 = gguf_py.read_gguf(q4_0)
    align = meta.get("general.alignment", 32)
    out = [(n, *full[n]) if n == "token_embd.weight" else (n, t, ne, b) for n, (t, ne, b) in q4.items()]
    gtypes.rewrite(q4_0, path("text-qat-q4_0.gguf"), out, align)
    yield path("text-qat-q4_0.gguf"), "Q4_0 (F16 token_embd)"
    yield q4_k, "Q4_K"
    for tname in ("Q3_K", "IQ4_XS"):
        out = []
        for n, (t, ne, b) in q4.items():
            if n.startswith("blk.") and len(ne) == 2 and ne[0] % 256 == 0:
                w = np.frombuffer(full[n][2], np.float16).astype(np.float64)
                t, b = gguf_py.TYPE_ID[tname], gtypes.random_blocks(tname, w.size, float(w.std()))
            out.append((n, t, ne, b))
        check(any(t == gguf_py.TYPE_ID[tname] for _, t, _, _ in out), f"{tname} text: some matrix rewritten")
        gtypes.rewrite(q4_0, path(f"text-{tname}.gguf"), out, align)
        yield path(f"text-{tname}.gguf"), tname


def gguf_name(name):
    if name in GLOBAL:
        return GLOBAL[name]
    for pre, g, plain, lin in (("vision_tower.encoder.layers.", "v.blk.", V_LAYER, V_LIN),
                               ("audio_tower.layers.", "a.blk.", A_LAYER, A_LIN)):
        if name.startswith(pre):
            n, rest = name[len(pre):].split(".", 1)
            if rest in plain:
                return f"{g}{n}.{plain[rest]}"
            base, tail = rest.rsplit(".", 1)
            if base.endswith(".linear"):
                base, tail = base[:-len(".linear")], "weight"
            return f"{g}{n}.{lin[base]}.{tail}"
    raise KeyError(name)


def llama_layout(name, x):
    """The checkpoint tensor as llama.cpp's converter stores it (PyTorch order)."""
    if name.endswith("patch_embedder.input_proj.weight"):
        p = int(round((x.shape[1] // 3) ** 0.5))
        return x.reshape(x.shape[0], p, p, 3).transpose(0, 3, 1, 2)
    if name.endswith("per_dim_scale"):
        return np.log1p(np.exp(x))
    if name.endswith("depthwise_conv1d.weight"):
        return x.reshape(x.shape[0], x.shape[2])
    return x.reshape(1) if x.ndim == 0 else x


for t in ("f16", "bf16", "q8_0"):
    meta, tensors = gguf_py.read_gguf(path(f"mmproj-{t}.gguf"))
    want_meta = {"general.architecture": "clip", "clip.vision.projector_type": "gemma4v",
                 "clip.audio.projector_type": "gemma4a", "clip.has_vision_encoder": True,
                 "clip.has_audio_encoder": True, "clip.vision.embedding_length": vc["hidden_size"],
                 "clip.vision.block_count": vc["num_hidden_layers"],
                 "clip.vision.attention.head_count": vc["num_attention_heads"],
                 "clip.vision.feed_forward_length": vc["intermediate_size"],
                 "clip.vision.patch_size": vc["patch_size"],
                 "clip.vision.projection_dim": cfg["text_config"]["hidden_size"],
                 "clip.audio.embedding_length": ac["hidden_size"], "clip.audio.block_count": ac["num_hidden_layers"],
                 "clip.audio.attention.head_count": ac["num_attention_heads"],
                 "clip.audio.feed_forward_length": 4 * ac["hidden_size"], "clip.audio.num_mel_bins": 128,
                 "clip.audio.projection_dim": cfg["text_config"]["hidden_size"],
                 "general.file_type": {"f16": 1, "bf16": 32, "q8_0": 7}[t]}
    for k, v in want_meta.items():
        check(meta.get(k) == v, f"mmproj {t}: metadata {k} = {meta.get(k)!r}, want {v!r}")
    check(meta.get("clip.vision.image_mean") == [0.0] * 3 and meta.get("clip.vision.image_std") == [1.0] * 3,
          f"mmproj {t}: image_mean/std 0/1")
    towers = {k[len("model."):]: v for k, v in hf.items()
              if k.split(".")[1] in ("vision_tower", "embed_vision", "audio_tower", "embed_audio")}
    expect = {gguf_name(k): (k, v) for k, v in towers.items()}
    check(set(expect) == set(tensors), f"mmproj {t}: tensor names: extra {sorted(set(tensors) - set(expect))[:4]}, "
          f"missing {sorted(set(expect) - set(tensors))[:4]}")
    for g, (name, x) in expect.items():
        if g not in tensors:
            continue
        ty, ne, raw = tensors[g]
        tname = gguf_py.TYPES[ty][0]
        want = llama_layout(name, x)
        check(list(ne) == list(reversed(want.shape)), f"mmproj {t}: {g} ne {ne}, want {list(reversed(want.shape))}")
        vector = sum(d > 1 for d in want.shape) <= 1
        forced_f32 = vector or "position_embd" in g or g.startswith("a.conv1d.") or g.endswith("conv_dw.weight")
        if forced_f32:
            want_type = "F32"
        elif g == "v.patch_embd.weight":
            want_type = "F16" if t == "f16" else "F32"  # llama.cpp's conv2d takes f16/f32 kernels
        elif t == "q8_0" and want.shape[-1] % 32 == 0:
            want_type = "Q8_0"
        elif t == "bf16":
            want_type = "BF16"
        else:
            want_type = "F16"
        check(tname == want_type, f"mmproj {t}: {g} type {tname}, want {want_type}")
        got, _ = gguf_py.decode(ty, raw, int(np.prod(ne)))
        got = got.reshape(want.shape)
        tol = 1e-2 * np.abs(want).max() if tname == "Q8_0" else 2e-3 * np.abs(want).max() + 1e-30
        err = np.abs(got - want).max()
        check(err <= tol, f"mmproj {t}: {g} values differ from the checkpoint's by {err:.3g} (bound {tol:.3g})")

# ---- encode: every form against the Hugging Face directory ---------------------------------
subprocess.run(["convert", "-size", "300x200", "gradient:red-blue", "-swirl", "90", path("a.png")], check=True)
subprocess.run(["convert", "-seed", "2", "-size", "97x333", "plasma:fractal", path("b.jpg")], check=True)
subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", path("a.wav"), "synth", "3.3", "sine", "300-2000"], check=True)
H = cfg["text_config"]["hidden_size"]
BOUND = {"f16": 0.99999, "bf16": 0.99999, "q8_0": 0.999}
worst = {}
for media in (["--image", path("a.png"), "--image-tokens", "140"], ["--image", path("b.jpg"), "--image-tokens", "70"],
              ["--audio", path("a.wav")]):
    ringlm("encode", "--model", HF, *media, "--out", path("ref.f32"))
    ref = np.fromfile(path("ref.f32"), np.float32).astype(np.float64).reshape(-1, H)
    for form, args in forms.items():
        ringlm("encode", *args, *media, "--out", path("got.f32"))
        got = np.fromfile(path("got.f32"), np.float32).astype(np.float64).reshape(-1, H)
        if got.shape != ref.shape:
            check(False, f"{form} {media[1]}: {got.shape[0]} soft tokens, want {ref.shape[0]}")
            continue
        cos = (got * ref).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(ref, axis=1)
        worst[form] = min(worst.get(form, 1.0), cos.min())
        check(cos.min() >= BOUND[form.split()[1]],
              f"{form} {media[1]}: min cosine {cos.min():.8f} < {BOUND[form.split()[1]]}")
for form, c in worst.items():
    print(f"{form}: min cosine per soft token {c:.8f} (bound {BOUND[form.split()[1]]})")

# ---- bad files -----------------------------------------------------------------------------
IMG = ["--image", path("a.png"), "--out", path("bad.f32")]


def refused(args, *needles, what):
    p = ringlm("encode", *args, *IMG, ok=False)
    msg = p.stderr
    check(p.returncode != 0 and all(n in msg for n in needles) and "Segmentation" not in msg,
          f"{what}: rc {p.returncode}, stderr {msg.strip()[:300]!r} should name {needles}")


src = path("mmproj-f16.gguf")
data = open(src, "rb").read()
for cut, name in ((len(data) // 2, "half"), (len(data) - 7, "tail"), (40, "header")):
    open(path(f"trunc-{name}.gguf"), "wb").write(data[:cut])
    refused(["--mmproj", path(f"trunc-{name}.gguf")], path(f"trunc-{name}.gguf"), what=f"mmproj truncated ({name})")

meta, tensors = gguf_py.read_gguf(src)
KV_TYPES = {bool: 7, int: 4, float: 12, str: 8}  # u32 ints, f64 floats: what ringlm reads either way


def write_variant(name, meta_edit=None, tensor_edit=None):
    m = {k: (KV_TYPES[type(v)], v) for k, v in meta.items() if not isinstance(v, list)}
    ts = [(n, ty, ne, raw) for n, (ty, ne, raw) in tensors.items()]
    if meta_edit:
        meta_edit(m)
    if tensor_edit:
        ts = tensor_edit(ts)
    gguf_py.write_gguf(path(name), m, ts)
    return path(name)


# The untouched rewrite loads (so each refusal below is the edit's doing).
p = ringlm("encode", "--mmproj", write_variant("same.gguf"), *IMG, ok=False)
check(p.returncode == 0, f"mmproj rewritten unchanged loads: {p.stderr.strip()[:200]}")
refused(["--mmproj", write_variant("arch.gguf", lambda m: m.update({"general.architecture": (8, "llama")}))],
        "arch.gguf", "general.architecture", what="wrong architecture")
refused(["--mmproj", write_variant("proj.gguf", lambda m: m.update({"clip.vision.projector_type": (8, "gemma3")}))],
        "proj.gguf", "clip.vision.projector_type", what="wrong projector type")
refused(["--mmproj", write_variant("key.gguf", lambda m: m.pop("clip.vision.block_count"))],
        "key.gguf", "clip.vision.block_count", what="missing metadata key")
refused(["--mmproj", write_variant("heads.gguf", lambda m: m.update({"clip.vision.attention.head_count_kv": (4, 3)}))],
        "heads.gguf", "head_count_kv", what="inconsistent head counts")
refused(["--mmproj", write_variant("missing.gguf", tensor_edit=lambda ts: [x for x in ts if x[0] != "v.blk.1.ln2.weight"])],
        "missing.gguf", "v.blk.1.ln2.weight", "layers.1.pre_feedforward_layernorm.weight", "missing",
        what="missing tensor (named by its GGUF and its Hugging Face name)")
refused(["--mmproj", write_variant("extra.gguf", tensor_edit=lambda ts: ts + [("v.blk.0.out_scale.weight", 0, [1],
                                                                                  struct.pack("<f", 1.0))])],
        "extra.gguf", "v.blk.0.out_scale.weight", what="unknown tensor")


def reshape_q(ts):
    out = []
    for n, ty, ne, raw in ts:
        if n == "v.blk.0.attn_q.weight":
            ne = [ne[0] // 2, ne[1] * 2]
        out.append((n, ty, ne, raw))
    return out


refused(["--mmproj", write_variant("shape.gguf", tensor_edit=reshape_q)], "shape.gguf",
        "layers.0.self_attn.q_proj.linear.weight", "shape", what="wrong matrix shape")


def negative_scale(ts):
    out = []
    for n, ty, ne, raw in ts:
        if n == "a.blk.0.per_dim_scale.weight":
            raw = struct.pack("<f", -1.0) + raw[4:]
        out.append((n, ty, ne, raw))
    return out


p = ringlm("encode", "--mmproj", write_variant("scale.gguf", tensor_edit=negative_scale), "--audio", path("a.wav"),
           "--out", path("bad.f32"), ok=False)
check(p.returncode != 0 and "a.blk.0.per_dim_scale.weight" in p.stderr and "scale.gguf" in p.stderr,
      f"negative softplus(per_dim_scale) refused: {p.stderr.strip()[:200]!r}")

# towers.rlpk: truncated, bad magic, corrupt index.
rl = path("packed-f16/towers.rlpk")
good = open(rl, "rb").read()
for name, blob, needles in (("truncated", good[:len(good) - 100], ("towers.rlpk", "past the end")),
                            ("magic", b"XX" + good[2:], ("towers.rlpk", "magic")),
                            ("index", good[:30] + b"\xff" + good[31:], ("towers.rlpk", "index"))):
    open(rl, "wb").write(blob)
    refused(["--model", path("packed-f16")], *needles, what=f"towers.rlpk {name}")
open(rl, "wb").write(good)

# ---- inspect, text-only models, and run with --mmproj --------------------------------------
for label, target in (("hf", HF), ("packed", path("packed-q8_0")), ("mmproj", path("mmproj-q8_0.gguf"))):
    out = ringlm("inspect", target).stdout
    for needle in ("vision tower: hidden 32", "soft-token budgets per image 70, 140, 280 (default), 560, 1120",
                   "audio tower: Conformer hidden 32", "at most 750 per clip", " parameters in "):
        check(needle in out, f"inspect {label}: {needle!r} missing")
    if label != "hf":
        check("Q8_0" in out, f"inspect {label}: q8_0 dtypes shown")
TEXT = path("text-only")
ringlm("make-test-model", TEXT, "--preset", "tiny", "--no-vision", "--no-audio")
out = ringlm("inspect", TEXT).stdout
check("vision tower: none" in out and "audio tower: none" in out, "inspect text-only: says none")
p = ringlm("convert", "--model", TEXT, "--mmproj-out", path("none.gguf"), ok=False)
check(p.returncode != 0 and "text only" in p.stderr, f"convert --mmproj-out of a text-only model: {p.stderr.strip()[:200]}")
# The tiny preset's 768-token vocabulary has no image/audio tokens: the end-to-end run uses
# the demo preset (the real tokenizer, tiny towers).
DEMO = path("demo")
tok = ["--tokenizer", os.environ["RINGLM_TOKENIZER_DIR"]] if os.environ.get("RINGLM_TOKENIZER_DIR") else []
ringlm("make-test-model", DEMO, "--preset", "demo", "--seed", "4", *tok)
ringlm("convert", "--model", DEMO, "--out", path("text.gguf"), "--mmproj-out", path("demo-mmproj.gguf"))
out = ringlm("inspect", path("text.gguf")).stdout
check("towers: none in this file" in out and "--mmproj" in out, "inspect text GGUF: says the towers live elsewhere")
RUN = ["run", "--model", path("text.gguf"), "--image", path("a.png"), "--audio", path("a.wav"), "--prompt", "Describe",
       "--max-tokens", "4"]
p = ringlm(*RUN, ok=False)
check(p.returncode != 0 and "--mmproj" in p.stderr, f"run text.gguf --image without --mmproj: {p.stderr.strip()[:200]}")
p = ringlm(*RUN, "--mmproj", path("demo-mmproj.gguf"), ok=False)
check(p.returncode == 0, f"run text.gguf --mmproj --image --audio: {p.stderr.strip()[-300:]}")
# The published pairings (issue #29): a text model in the types the uploads use beside an mmproj
# in BF16 and in F16. The test checkpoint is bf16, so both mmproj files hold the same values:
# the greedy replies must be equal, and differ from the reply without media.
ringlm("convert", "--model", DEMO, "--out", path("text-q4_k.gguf"), "--type", "q4_k", "--mmproj-out",
       path("demo-mmproj-bf16.gguf"), "--tower-type", "bf16")
for text, kind in text_variants(DEMO, path("text.gguf"), path("text-q4_k.gguf")):
    replies = []
    for mm in ("demo-mmproj.gguf", "demo-mmproj-bf16.gguf"):
        p = ringlm("run", "--model", text, "--mmproj", path(mm), "--image", path("a.png"), "--audio", path("a.wav"),
                   "--prompt", "Describe", "--max-tokens", "6", ok=False)
        check(p.returncode == 0 and p.stdout.strip(), f"run {kind} text --mmproj {mm} --image --audio: {p.stderr[-300:]}")
        replies.append(p.stdout)
    bare = ringlm("run", "--model", text, "--prompt", "Describe", "--max-tokens", "6").stdout
    check(replies[0] == replies[1] != bare, f"{kind} text: F16 and BF16 mmproj replies {replies}, without media {bare!r}")
    print(f"ok   {kind} text beside F16 and BF16 mmproj: same reply {replies[0].strip()!r}")
p = ringlm("run", "--model", path("text.gguf"), "--mmproj", path("demo-mmproj.gguf"), "--image", path("a.png"),
           "--prompt", "Total?", "--max-tokens", "300", "--json-schema", os.path.join(HERE, "..", "..", "examples",
                                                                                     "ticket.schema.json"), ok=False)
check(p.returncode == 0, f"guided run with --mmproj: {p.stderr.strip()[-300:]}")
if p.returncode == 0:
    try:
        json.loads(p.stdout)
    except ValueError:
        check(False, f"guided run with --mmproj: reply is not JSON: {p.stdout[:200]!r}")

if failures:
    raise SystemExit(f"{len(failures)} check(s) failed")
print("mmproj/packed towers: all checks passed")
