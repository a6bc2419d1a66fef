#!/usr/bin/env bash
# Audio through the chat template, chunked prefill and guided decoding on the demo model
# (real tokenizer and template, random weights and audio tower):
# - `run --audio` with a JSON Schema gives valid JSON and reports the soft tokens (a 44.1 kHz
#   stereo clip is resampled), with an image too;
# - `extract` rows with audio fields (paths relative to the input file) all succeed, and a
#   row's reply depends only on its own clip: two rows with the same clip agree, and the row
#   after a different clip equals a fresh single run (no stale soft-token KV reused);
# - a checkpoint without an audio tower refuses --audio with a clear error.
set -euo pipefail
mkdir -p "$RINGLM_TMP" && cd "$RINGLM_TMP"
PY=${RINGLM_PYTHON:-python3}
"$RINGLM" make-test-model model --preset demo --seed 4 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
"$RINGLM" make-test-model noaudio --preset demo --seed 4 --no-audio --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
mkdir -p clips
espeak-ng -w clips/speech22k.wav "my order never arrived, please refund me" 2>/dev/null
sox clips/speech22k.wav -r 16000 -b 16 clips/a.wav
sox -n -r 44100 -c 2 -b 16 clips/b.wav synth 1.2 sine 300 sine 900 gain -6
sox clips/a.wav clips/c.flac
convert -seed 1 -size 96x96 plasma: -depth 8 clips/p.png
cat > schema.json <<'JSON'
{"type":"object","properties":{"topic":{"enum":["refund","delivery","other"]},"urgent":{"type":"boolean"},"note":{"type":"string","maxLength":20}},"required":["topic","urgent","note"],"additionalProperties":false}
JSON
common=(--model model --json-schema schema.json --max-tokens 80 --threads 2)

"$RINGLM" run "${common[@]}" --audio clips/a.wav --prompt "What is this about?" --stats > run_a.txt 2> run_a.err
"$PY" -c 'import json,sys; v=json.load(open("run_a.txt")); assert v["topic"] in ("refund","delivery","other"), v'
frames=$("$PY" -c 'import soundfile as sf; n=sf.info("clips/a.wav").frames; print(((((n+160-321)//160+1)+1)//2+1)//2)')
grep -q "1 audio clip(s), $frames soft tokens" run_a.err || { cat run_a.err; exit 1; }
"$RINGLM" run "${common[@]}" --audio clips/b.wav --prompt "What is this?" --stats > run_b.txt 2> run_b.err
grep -q "1 audio clip(s), 30 soft tokens" run_b.err || { cat run_b.err; exit 1; }  # 1.2 s: 119 frames -> 30
"$RINGLM" run "${common[@]}" --audio clips/a.wav --audio clips/b.wav --image clips/p.png --image-tokens 70 \
  --prompt "Compare" --stats > run_ab.txt 2> run_ab.err
grep -q "1 image(s), [0-9]* soft tokens; 2 audio clip(s), $((frames + 30)) soft tokens" run_ab.err || { cat run_ab.err; exit 1; }
"$PY" -c 'import json; json.load(open("run_b.txt")); json.load(open("run_ab.txt"))'
# A placeholder written in the user's text stays text: one clip, one template placeholder.
"$RINGLM" run "${common[@]}" --audio clips/b.wav --prompt "What is <|audio|> here?" --stats > run_p.txt 2> run_p.err
grep -q "1 audio clip(s), 30 soft tokens" run_p.err || { cat run_p.err; exit 1; }

cat > rows.jsonl <<'JSON'
{"id":"r1","text":"What is this about?","audio":"clips/a.wav"}
{"id":"r2","text":"What is this about?","audio":"clips/b.wav"}
{"id":"r3","text":"What is this about?","audios":["clips/c.flac"]}
{"id":"r4","text":"No recording here"}
JSON
mkdir -p sub && cp rows.jsonl sub/ && cp -r clips sub/
"$RINGLM" extract --model model --schema schema.json --input sub/rows.jsonl --output out.jsonl --max-tokens 80 \
  --threads 2 --instructions "Extract the fields." 2>/dev/null
head -2 sub/rows.jsonl | tail -1 > sub/only_r2.jsonl
"$RINGLM" extract --model model --schema schema.json --input sub/only_r2.jsonl --output out_r2.jsonl --max-tokens 80 \
  --threads 2 --instructions "Extract the fields." 2>/dev/null
"$PY" - <<'PYEOF'
import json
rows = {r["id"]: r for r in map(json.loads, open("out.jsonl"))}
alone = json.loads(open("out_r2.jsonl").readline())
assert alone["ok"] and alone["output"] == rows["r2"]["output"], (alone, rows["r2"])
assert len(rows) == 4, rows
for r in rows.values():
    assert r["ok"], r
# c.flac holds the same samples as a.wav: the same soft tokens, the same reply.
assert rows["r1"]["audio_tokens"] == rows["r3"]["audio_tokens"] > 0
assert rows["r1"]["output"] == rows["r3"]["output"], (rows["r1"], rows["r3"])
assert "audio_tokens" not in rows["r4"]
print("r1", rows["r1"]["output"], "r2", rows["r2"]["output"])
PYEOF

if "$RINGLM" run --model noaudio --audio clips/a.wav --prompt "x" --max-tokens 4 2> err.txt; then exit 1; fi
grep -q "has no audio tower" err.txt
if "$RINGLM" run --model model --audio clips/missing.wav --prompt "x" --max-tokens 4 2> err.txt; then exit 1; fi
grep -q "clips/missing.wav: no such audio file" err.txt
echo "audio prompts ok"
