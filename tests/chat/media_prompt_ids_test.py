"""A conversation with images and audio clips becomes the prompt transformers' Gemma4Processor
gives it: the text the model's chat template renders in @huggingface/jinja, each placeholder
expanded for its image's or clip's soft-token count, tokenized by @huggingface/tokenizers
(tests/js/media_prompt_reference.mjs, which computes the counts from the files' headers by the
processor's rules). ringlm's ids (`ringlm template --image --audio`, the towers run) must equal
those ids everywhere except at the soft-token positions, which carry the pad id as
Gemma4Model looks them up, and those positions must be exactly where the reference has
<|image|> / <|audio|>. Checked for run/extract's path (placeholders expanded in the rendered
text, user text plain or trusted) and serve's (--expand-ids: the tokenized prompt's
placeholder ids expanded).

Env: RINGLM, RINGLM_SOURCE_DIR, RINGLM_TOKENIZER_DIR, RINGLM_TMP (set by CTest).
"""
import json
import os
import shutil
import subprocess
import sys

ringlm = os.environ["RINGLM"]
source = os.environ["RINGLM_SOURCE_DIR"]
tmp = os.environ["RINGLM_TMP"]
os.makedirs(tmp, exist_ok=True)
js_dir = os.path.join(source, "tests", "js")
if shutil.which("node") is None or not os.path.isdir(os.path.join(js_dir, "node_modules", "@huggingface", "jinja")):
    sys.exit("media_prompt_ids_test: needs node and `cd tests/js && npm ci`")


def sh(*cmd):
    subprocess.run(cmd, check=True, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


model = os.path.join(tmp, "model")
if not os.path.isfile(os.path.join(model, "config.json")):
    sh(ringlm, "make-test-model", model, "--preset", "demo", "--seed", "3", "--tokenizer", os.environ["RINGLM_TOKENIZER_DIR"])
sh("convert", "-seed", "1", "-size", "320x240", "plasma:", "-depth", "8", "wide.png")
sh("convert", "-size", "2000x8", "gradient:red-blue", "-depth", "8", "thin.png")  # the thin-image branch
sh("espeak-ng", "-w", "speech22k.wav", "the parcel came two days late")
sh("sox", "speech22k.wav", "-r", "16000", "-b", "16", "speech.wav")
sh("sox", "-n", "-r", "44100", "-c", "2", "-b", "16", "tones.wav", "synth", "1.7", "sine", "300", "sine", "900", "gain", "-6")

user = lambda *parts: {"role": "user", "content": list(parts)}
text = lambda t: {"type": "text", "text": t}
IMAGE, AUDIO = {"type": "image"}, {"type": "audio"}
cases = [
    # The acceptance case: one message with an image and an audio clip.
    {"request": {"messages": [user(IMAGE, AUDIO, text("What is shown, and what is said?"))]},
     "images": ["wide.png"], "audios": ["speech.wav"]},
    # System turn, media between texts, a resampled stereo clip, a budget, a second turn.
    {"request": {"messages": [{"role": "system", "content": "Answer in one word."},
                              user(text("Listen: "), {"type": "input_audio"}, text(" and look: "), IMAGE),
                              {"role": "assistant", "content": "Tones."},
                              user(IMAGE, text("And this one?"), AUDIO)]},
     "images": ["thin.png", "wide.png"], "audios": ["tones.wav", "speech.wav"], "image_tokens": 70},
    {"request": {"messages": [user(AUDIO, AUDIO, IMAGE)]},
     "images": ["wide.png"], "audios": ["tones.wav", "speech.wav"], "image_tokens": 560},
]
for c in cases:
    c["add_generation_prompt"] = True
cases_path = os.path.join(tmp, "cases.jsonl")
with open(cases_path, "w", encoding="utf-8") as f:
    for c in cases:
        f.write(json.dumps(c) + "\n")
expected_path = os.path.join(tmp, "expected.jsonl")
subprocess.run(["node", os.path.join(js_dir, "media_prompt_reference.mjs"), "--model", model, "--cases", cases_path,
                "--out", expected_path], check=True, cwd=js_dir)
expected = [json.loads(line) for line in open(expected_path, encoding="utf-8") if line.strip()]
assert len(expected) == len(cases)

vocab = json.load(open(os.path.join(model, "config.json")))
IMAGE_ID, AUDIO_ID = vocab.get("image_token_id", 258880), vocab.get("audio_token_id", 258881)
PAD = vocab.get("text_config", {}).get("pad_token_id", 0)

failures = 0
for i, (case, exp) in enumerate(zip(cases, expected)):
    path = os.path.join(tmp, f"case{i}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(case["request"], f)
    media = [a for img in case["images"] for a in ("--image", os.path.join(tmp, img))]
    media += [a for clip in case["audios"] for a in ("--audio", os.path.join(tmp, clip))]
    if case.get("image_tokens"):
        media += ["--image-tokens", str(case["image_tokens"])]
    assert exp["ids"].count(IMAGE_ID) == sum(exp["image_tokens"]) and exp["ids"].count(AUDIO_ID) == sum(exp["audio_tokens"])
    for variant in ([], ["--plain-user-text"], ["--plain-user-text", "--expand-ids"]):
        name = f"case {i} {' '.join(variant) or '(trusted)'}"
        r = subprocess.run([ringlm, "template", "--model", model, "--messages", path, "--add-generation-prompt", *media,
                            *variant], capture_output=True, text=True, encoding="utf-8")
        if r.returncode != 0:
            print(f"{name}: exit {r.returncode}: {r.stderr}")
            failures += 1
            continue
        got = json.loads(r.stdout)
        if got["text"] != exp["text"]:
            print(f"{name}: rendered text differs\n  expected {exp['text']!r}\n  actual   {got['text']!r}")
            failures += 1
        want_soft = [k for k, t in enumerate(exp["ids"]) if t in (IMAGE_ID, AUDIO_ID)]
        if got["soft_positions"] != want_soft:
            print(f"{name}: soft-token positions differ: {len(got['soft_positions'])} vs the reference's {len(want_soft)}")
            failures += 1
        if got["image_tokens"] != sum(exp["image_tokens"]) or got["audio_tokens"] != sum(exp["audio_tokens"]):
            print(f"{name}: soft tokens {got['image_tokens']}/{got['audio_tokens']}, reference {exp['image_tokens']}/{exp['audio_tokens']}")
            failures += 1
        # The reference's ids with the soft positions as the model sees them (pad).
        want = [PAD if t in (IMAGE_ID, AUDIO_ID) else t for t in exp["ids"]]
        if got["ids"] != want:
            n = next((k for k, (a, b) in enumerate(zip(got["ids"], want)) if a != b), min(len(got["ids"]), len(want)))
            print(f"{name}: ids differ at {n} (lengths {len(got['ids'])} / {len(want)})\n"
                  f"  expected {want[max(0, n - 3):n + 8]}\n  actual   {got['ids'][max(0, n - 3):n + 8]}")
            failures += 1
    print(f"case {i}: {len(exp['ids'])} ids, image soft tokens {exp['image_tokens']}, audio {exp['audio_tokens']}")

if failures:
    sys.exit(f"{failures} mismatches")
print(f"media prompts: {len(cases)} conversations x 3 paths equal @huggingface/jinja + @huggingface/tokenizers")
