#!/usr/bin/env bash
# The page's Markdown renderer under node (tests/js/markdown_test.mjs): the subset renders and
# no raw HTML, attribute or javascript: link gets through. Needs node only (no server).
set -euo pipefail
: "${RINGLM_SOURCE_DIR:?}"
exec timeout 60 node "$RINGLM_SOURCE_DIR/tests/js/markdown_test.mjs"
