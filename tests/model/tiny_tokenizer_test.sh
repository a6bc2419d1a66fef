#!/usr/bin/env bash
# The tiny test checkpoint's tokenizer files load in the reference JS tokenizer and behave.
set -euo pipefail
modules="$RINGLM_SOURCE_DIR/tests/js/node_modules"
if [[ ! -d "$modules/@huggingface/tokenizers" ]]; then
  echo "missing $modules: run 'cd tests/js && npm ci' (scripts/setup.sh does it)" >&2
  exit 1
fi
mkdir -p "$RINGLM_TMP"
"$RINGLM" make-test-model "$RINGLM_TMP/tiny" --preset tiny --seed 3
node "$RINGLM_SOURCE_DIR/tests/model/tiny_tokenizer_check.mjs" "$RINGLM_TMP/tiny" "$modules"
