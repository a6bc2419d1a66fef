#!/usr/bin/env bash
# ringlm export-gguf + inspect on a tiny random checkpoint: the file lists quantized
# matrices under llama.cpp names, embeds the tokenizer, and its derived config matches.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
rm -rf tiny tiny.gguf
"$RINGLM" make-test-model tiny --preset tiny --seed 2 > /dev/null
"$RINGLM" export-gguf tiny tiny.gguf --type q8_0 | tee export.txt
grep -q "with tokenizer" export.txt
"$RINGLM" inspect tiny.gguf > inspect.txt
grep -Eq '^  blk\.0\.attn_q\.weight +Q8_0 +\{64, ' inspect.txt
grep -Eq '^  token_embd\.weight +Q8_0 ' inspect.txt
grep -Eq '^  output_norm\.weight +F32 ' inspect.txt
grep -Eq '^  tokenizer\.ggml\.merges +array<string>' inspect.txt
grep -Eq '^  gemma4\.attention\.sliding_window_pattern +array<bool>' inspect.txt
"$RINGLM" inspect --config tiny.gguf > config.json
"$RINGLM_PYTHON" - "$RINGLM_TMP" <<'PY'
import json, sys, os
d = sys.argv[1]
got = json.load(open(os.path.join(d, "config.json")))
ref = json.load(open(os.path.join(d, "tiny", "config.json")))
ref = ref.get("text_config", ref)
for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
          "head_dim", "global_head_dim", "intermediate_size", "use_double_wide_mlp", "num_kv_shared_layers",
          "layer_types", "sliding_window", "hidden_size_per_layer_input", "final_logit_softcapping",
          "rms_norm_eps", "max_position_embeddings"):
    assert got[k] == ref[k], (k, got[k], ref[k])
assert got["rope_parameters"]["full_attention"]["partial_rotary_factor"] == 0.25
print("config matches")
PY
# Errors: a bad --type and a directory without a checkpoint.
if "$RINGLM" export-gguf tiny bad.gguf --type q3_k 2> err.txt; then exit 1; fi
grep -q "ringlm: error: --type Q3_K" err.txt
mkdir -p empty
if "$RINGLM" export-gguf empty bad.gguf 2> err.txt; then exit 1; fi
grep -q "ringlm: error: .*config.json" err.txt
echo "export-gguf ok"
