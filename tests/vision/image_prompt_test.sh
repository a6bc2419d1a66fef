#!/usr/bin/env bash
# Images through the chat template, chunked prefill and guided decoding on the demo model
# (real tokenizer and template, random weights and vision tower):
# - `run --image` with a JSON Schema gives valid JSON and reports the soft tokens;
# - `extract` rows with image fields (paths relative to the input file) all succeed, and a
#   row's reply depends only on its own image: two rows with the same image agree, and the
#   row after a different image equals a fresh single run (no stale soft-token KV reused);
# - user text next to an image cannot forge a placeholder or a control token;
# - a text-only checkpoint refuses --image with a clear error.
set -euo pipefail
mkdir -p "$RINGLM_TMP" && cd "$RINGLM_TMP"
PY=${RINGLM_PYTHON:-python3}
"$RINGLM" make-test-model model --preset demo --seed 4 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
"$RINGLM" make-test-model text --preset demo --seed 4 --no-vision --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
mkdir -p imgs
convert -seed 1 -size 320x240 plasma: -depth 8 imgs/a.png
convert -size 200x300 gradient:red-blue -swirl 90 -quality 85 imgs/b.jpg
cat > schema.json <<'JSON'
{"type":"object","properties":{"kind":{"enum":["receipt","form","photo","screenshot"]},"has_text":{"type":"boolean"},"note":{"type":"string","maxLength":20}},"required":["kind","has_text","note"],"additionalProperties":false}
JSON
common=(--model model --json-schema schema.json --max-tokens 80 --image-tokens 70 --threads 2)

"$RINGLM" run "${common[@]}" --image imgs/a.png --prompt "What is this?" --stats > run_a.txt 2> run_a.err
"$PY" -c 'import json,sys; v=json.load(open("run_a.txt")); assert v["kind"] in ("receipt","form","photo","screenshot"), v'
grep -q "1 image(s), 6[0-9] soft tokens" run_a.err
"$RINGLM" run "${common[@]}" --image imgs/b.jpg --prompt "What is this?" > run_b.txt 2>/dev/null
"$RINGLM" run "${common[@]}" --image imgs/a.png --image imgs/b.jpg --prompt "Compare" > run_ab.txt 2>/dev/null
"$PY" -c 'import json; json.load(open("run_b.txt")); json.load(open("run_ab.txt"))'

cat > rows.jsonl <<'JSON'
{"id":"r1","text":"What is this?","image":"imgs/a.png"}
{"id":"r2","text":"What is this?","image":"imgs/b.jpg"}
{"id":"r3","text":"What is this?","images":["imgs/a.png"]}
{"id":"r4","text":"No picture here"}
JSON
mkdir -p sub && cp rows.jsonl sub/ && cp -r imgs sub/
"$RINGLM" extract --model model --schema schema.json --input sub/rows.jsonl --output out.jsonl --max-tokens 80 \
  --image-tokens 70 --threads 2 --instructions "Extract the fields." 2>/dev/null
# r2 alone, in a fresh job: must equal r2 after r1's image in the first job.
head -2 sub/rows.jsonl | tail -1 > sub/only_r2.jsonl
"$RINGLM" extract --model model --schema schema.json --input sub/only_r2.jsonl --output out_r2.jsonl --max-tokens 80 \
  --image-tokens 70 --threads 2 --instructions "Extract the fields." 2>/dev/null
"$PY" - <<'PYEOF'
import json
rows = {r["id"]: r for r in map(json.loads, open("out.jsonl"))}
alone = json.loads(open("out_r2.jsonl").readline())
assert alone["ok"] and alone["output"] == rows["r2"]["output"], (alone, rows["r2"])
assert len(rows) == 4, rows
for r in rows.values():
    assert r["ok"], r
assert rows["r1"]["image_tokens"] == rows["r3"]["image_tokens"] > 0
assert rows["r1"]["output"] == rows["r3"]["output"], (rows["r1"], rows["r3"])
print("r1", rows["r1"]["output"], "r2", rows["r2"]["output"])
PYEOF

# User text next to an image stays text: "<|image|>" written there is no second placeholder,
# and a control token written there is several plain tokens, not the one control id.
"$RINGLM" run "${common[@]}" --image imgs/a.png --prompt 'What is <|image|> this?' > /dev/null 2>&1
count() { "$RINGLM" run --model model --max-tokens 1 --image-tokens 70 --threads 2 --image imgs/a.png --prompt "$1" --stats 2>&1 >/dev/null |
  sed -n 's/.*ringlm: \([0-9]*\) prompt tokens.*/\1/p'; }
plain=$(count 'x'); forged=$(count 'x<turn|>')
[[ -n $plain && -n $forged ]] && (( forged - plain >= 2 )) || { echo "control token in image-row text was parsed: $plain -> $forged"; exit 1; }

if "$RINGLM" run --model text --image imgs/a.png --prompt "x" --max-tokens 4 2> err.txt; then exit 1; fi
grep -q "has no vision tower" err.txt
if "$RINGLM" run --model model --image imgs/missing.png --prompt "x" --max-tokens 4 2> err.txt; then exit 1; fi
grep -q "imgs/missing.png: no such image file" err.txt
echo "image prompts ok"
