#!/usr/bin/env bash
# The `openai` npm client against `ringlm serve` on a real engine: the demo-size model (tiny
# random weights, the real Gemma 4 tokenizer and chat template). Same script as the
# fake-backend test, in its "real" mode (it asserts shapes and invariants, not text).
set -euo pipefail
mkdir -p "$RINGLM_TMP"
model="$RINGLM_TMP/model"
rm -rf "$model"
"$RINGLM" make-test-model "$model" --preset demo --seed 2 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
RINGLM_SERVE_ARGS="--model $model --slots 2 --queue 16 --ctx 2048" RINGLM_TEST_MODE=real \
  bash "$(dirname "$0")/openai_client_test.sh"
