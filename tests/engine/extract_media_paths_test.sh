#!/usr/bin/env bash
# Media paths in `extract` rows (issue #28): relative to the input file's folder and only under
# it. A row naming "../x.png", an absolute path elsewhere, or a symlink (even one pointing
# inside) gets a failed record saying so (the landed main read any of them); a plain
# relative path works; --allow-local-media DIR widens the folder to DIR. The files are opened
# beneath the folder by the kernel (io/beneath.h), as serve --allow-local-media does.
set -euo pipefail
source "$(dirname "$0")/extract_lib.sh"
rm -rf in && mkdir -p in/sub
convert -seed 1 -size 64x64 plasma: -depth 8 in/sub/a.png
cp in/sub/a.png outside.png
ln -s sub/a.png in/link.png
cat > in/rows.jsonl <<JSONL
{"id":"plain","text":"look","image":"sub/a.png"}
{"id":"dotdot","text":"look","image":"../outside.png"}
{"id":"absolute","text":"look","image":"$PWD/outside.png"}
{"id":"link","text":"look","image":"link.png"}
{"id":"inside-abs","text":"look","images":["$PWD/in/sub/a.png"]}
JSONL
run() { "$RINGLM" extract --model model --schema schema.json --input in/rows.jsonl --max-tokens 12 --image-tokens 70 --no-progress "$@" 2>/dev/null || [[ $? == 3 ]]; }
rm -f out.jsonl wide.jsonl
run --output out.jsonl
run --output wide.jsonl --allow-local-media "$PWD"
"$RINGLM_PYTHON" - <<'PY'
import json
def load(p):
    return {r["id"]: r for r in map(json.loads, open(p))}
out, wide = load("out.jsonl"), load("wide.jsonl")
for rid in ("plain", "inside-abs"):
    assert out[rid].get("image_tokens", 0) > 0, (rid, out[rid])
for rid in ("dotdot", "absolute", "link"):
    r = out[rid]
    assert not r["ok"] and "image_tokens" not in r, (rid, r)
    assert "is outside the input file's folder" in r["error"] and "--allow-local-media" in r["error"], r["error"]
    print(f"{rid}: {r['error']}")
for rid in ("plain", "dotdot", "absolute", "inside-abs"):
    assert wide[rid].get("image_tokens", 0) > 0, (rid, wide[rid])
assert not wide["link"]["ok"] and "symlinks are refused" in wide["link"]["error"], wide["link"]
print("media paths: inside read, outside and symlinks refused, --allow-local-media widens")
PY
