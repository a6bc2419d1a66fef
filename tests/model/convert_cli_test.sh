#!/usr/bin/env bash
# `ringlm convert` from the command line: a packed directory that the text-generating
# commands load (tokenizer and chat template copied), `--out FILE.gguf` writing the same
# file as export-gguf, and the errors for misused flags and bad inputs.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
rm -rf tiny packed a.gguf b.gguf
"$RINGLM" make-test-model tiny --preset tiny --seed 4 > /dev/null 2>&1
"$RINGLM" convert --model tiny --out packed --threads 2 | tee convert.txt
grep -Eq 'packed: 72 q4p16 matrices, 10 f32 matrices, weights.rlpk [0-9]+ bytes, sidecar 219420 bytes' convert.txt
test -f packed/gemma4_qat_gather_raw/meta.json
test -f packed/tokenizer.json
test ! -e packed/model.safetensors
# The engine path (tokenizer + chat template from the packed directory) generates.
"$RINGLM" run --model packed --prompt "hello" -n 4 > run.txt
# inspect reads the packed directory: q4p16 matrices and the sidecar's int8 tables.
"$RINGLM" inspect packed > inspect_packed.txt
grep -q "packed model directory (ringlm convert)" inspect_packed.txt
grep -Eq "layers\.0\.mlp\.gate_proj\.weight +Q4_0p16 +\[128, 64\]" inspect_packed.txt
grep -Eq "embed_tokens_per_layer\.weight +I8 .*embed_per_layer\.i8" inspect_packed.txt
"$RINGLM" run --model packed --weights stored --prompt "hello" -n 4 > run_stored.txt
# GGUF through convert is export-gguf's file, byte for byte.
"$RINGLM" convert --model tiny --out a.gguf --type q8_0 > /dev/null
"$RINGLM" export-gguf tiny b.gguf --type q8_0 > /dev/null
cmp a.gguf b.gguf
"$RINGLM" convert --model tiny --out a.gguf > /dev/null   # default type q4_0
"$RINGLM" inspect a.gguf > inspect.txt
grep -Eq '^  blk\.0\.attn_q\.weight +Q4_0 ' inspect.txt
# Errors.
if "$RINGLM" convert --model tiny --out packed2 --type q8_0 2> err.txt; then exit 1; fi
grep -q "ringlm: error: convert: --type applies to GGUF output" err.txt
mkdir -p empty
if "$RINGLM" convert --model empty --out packed3 2> err.txt; then exit 1; fi
grep -q "ringlm: error: .*config.json" err.txt
if "$RINGLM" convert --model tiny --out tiny 2> err.txt; then exit 1; fi
grep -q "is the checkpoint directory" err.txt
rm packed/gemma4_qat_gather_raw/embed_tokens.scale.f32
if "$RINGLM" logits --model packed --ids 2,5 --out x.bin 2> err.txt; then exit 1; fi
grep -q "ringlm: error: .*embed_tokens.scale.f32: missing" err.txt
echo "convert cli ok"
