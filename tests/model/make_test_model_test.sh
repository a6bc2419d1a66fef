#!/usr/bin/env bash
# make-test-model is deterministic per seed, differs across seeds, and its layout variants
# hold the same tensors (checked through the safetensors headers).
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
rm -rf a b c sharded f32 flat bad towers
"$RINGLM" make-test-model a --seed 7
"$RINGLM" make-test-model b --seed 7
"$RINGLM" make-test-model c --seed 8
"$RINGLM" make-test-model sharded --seed 7 --shards 4 --prefix model.
"$RINGLM" make-test-model f32 --seed 7 --dtype f32 --with-shared-kv
"$RINGLM" make-test-model flat --seed 7 --flat-config
"$RINGLM" make-test-model towers --seed 7 --towers-only
cmp a/model.safetensors b/model.safetensors
cmp a/tokenizer.json b/tokenizer.json
if cmp -s a/model.safetensors c/model.safetensors; then echo "seeds 7 and 8 wrote the same weights" >&2; exit 1; fi
"$RINGLM_PYTHON" - <<'PY'
import json, struct, os
def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return h
def names(d, prefix):
    files = ["model.safetensors"]
    if os.path.exists(f"{d}/model.safetensors.index.json"):
        wm = json.load(open(f"{d}/model.safetensors.index.json"))["weight_map"]
        files = sorted(set(wm.values()))
        assert len(files) == 4, files
        for name, fn in wm.items():
            assert name in header(f"{d}/{fn}"), (name, fn)
    out = {}
    for fn in files:
        for k, v in header(f"{d}/{fn}").items():
            if k.startswith(("model.vision_tower.", "model.embed_vision.", "model.audio_tower.", "model.embed_audio.")):
                continue  # the vision and audio towers (tests/vision, tests/audio check them)
            assert k.startswith(prefix), k
            out[k[len(prefix):]] = v
    return out
a = names("a", "model.language_model.")
s = names("sharded", "model.")
f = names("f32", "model.language_model.")
assert set(a) == set(s), set(a) ^ set(s)
assert all(a[k]["shape"] == s[k]["shape"] for k in a)
extra = set(f) - set(a)
# --with-shared-kv adds k_proj, v_proj and k_norm on each of the 5 KV-shared layers.
assert len(extra) == 15 and all(".self_attn.k_" in k or ".self_attn.v_" in k for k in extra), extra
assert all(f[k]["dtype"] == "F32" for k in f) and all(a[k]["dtype"] == "BF16" for k in a)
cfg = json.load(open("flat/config.json"))
assert "text_config" not in cfg and cfg["num_hidden_layers"] == 10
nested = json.load(open("a/config.json"))
assert nested["vision_config"]["hidden_size"] == 32 and "vision_config" not in cfg
assert "model.embed_vision.embedding_projection.weight" in header("a/model.safetensors")
assert nested["audio_config"]["hidden_size"] == 32 and "audio_config" not in cfg
assert "model.embed_audio.embedding_projection.weight" in header("a/model.safetensors")
# --towers-only: the towers alone, no text decoder, no tokenizer.
towers = header("towers/model.safetensors")
assert towers and all(k.startswith(("model.vision_tower.", "model.embed_vision.", "model.audio_tower.",
                                    "model.embed_audio.")) for k in towers), sorted(towers)[:5]
assert set(towers) == {k for k in header("a/model.safetensors") if ".language_model." not in k}
assert not os.path.exists("towers/tokenizer.json") and json.load(open("towers/config.json"))["audio_config"]
assert nested["text_config"]["layer_types"] == cfg["layer_types"]
gen = json.load(open("a/generation_config.json"))
tok = json.load(open("a/tokenizer.json"))
vocab = {v: k for k, v in tok["model"]["vocab"].items()}
assert [vocab[i] for i in gen["eos_token_id"]] == ["<eos>", "<turn|>", "<|tool_response>"]
print("make-test-model layouts ok")
PY
# Bad options are one-line errors.
if "$RINGLM" make-test-model bad --preset huge 2> err.txt; then exit 1; fi
grep -q "unknown preset 'huge'" err.txt
if "$RINGLM" make-test-model bad --dtype q4 2> err.txt; then exit 1; fi
grep -q -- "--dtype" err.txt
echo "make-test-model ok"
