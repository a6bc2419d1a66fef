"""`ringlm template` reproduces every case of chat-golden.jsonl (text and ids), and reports
malformed inputs with a one-line error and exit status 1.

Env: RINGLM, RINGLM_TOKENIZER_DIR, RINGLM_TEST_DATA_DIR, RINGLM_TMP (set by CTest).
"""
import json
import os
import subprocess
import sys

ringlm = os.environ["RINGLM"]
model = os.environ["RINGLM_TOKENIZER_DIR"]
tmp = os.environ["RINGLM_TMP"]
os.makedirs(tmp, exist_ok=True)
failures = 0


def run(*args):
    return subprocess.run([ringlm, "template", "--model", model, *args], capture_output=True, text=True, encoding="utf-8")


with open(os.path.join(os.environ["RINGLM_TEST_DATA_DIR"], "tokenizer", "chat-golden.jsonl"), encoding="utf-8") as f:
    golden = [json.loads(line) for line in f if line.strip()]
assert golden, "no golden cases"
for i, case in enumerate(golden):
    path = os.path.join(tmp, f"golden{i}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(case["input"], f, ensure_ascii=False)
    flags = ["--messages", path]
    if case["add_generation_prompt"]:
        flags.append("--add-generation-prompt")
    flags.append("--enable-thinking" if case["enable_thinking"] else "--disable-thinking")
    r = run(*flags)
    if r.returncode != 0:
        print(f"golden case {i}: exit {r.returncode}: {r.stderr}")
        failures += 1
        continue
    out = json.loads(r.stdout)
    if out["text"] != case["text"]:
        print(f"golden case {i}: text differs\n  expected {case['text']!r}\n  actual   {out['text']!r}")
        failures += 1
    if out["ids"] != case["ids"]:
        print(f"golden case {i}: ids differ\n  expected {case['ids']}\n  actual   {out['ids']}")
        failures += 1
print(f"{len(golden)} golden cases checked")

# Malformed inputs: exit 1 and a single "ringlm: error: ..." line naming what is wrong.
bad_template = os.path.join(tmp, "bad.jinja")
with open(bad_template, "w") as f:
    f.write("{% for m in messages %}\n{{ m.content | nosuch }}\n{% endfor %}")
unclosed = os.path.join(tmp, "unclosed.jinja")
with open(unclosed, "w") as f:
    f.write("{{ bos_token }}\n{% if messages %}\n  {{ messages[0].content }}")
messages = os.path.join(tmp, "msgs.json")
with open(messages, "w") as f:
    json.dump({"messages": [{"role": "user", "content": "hi"}]}, f)
bad_json = os.path.join(tmp, "bad.json")
with open(bad_json, "w") as f:
    f.write('{"messages": [')
no_role = os.path.join(tmp, "norole.json")
with open(no_role, "w") as f:
    json.dump({"messages": [{"content": "hi"}]}, f)
raising = os.path.join(tmp, "raise.jinja")
with open(raising, "w") as f:
    f.write("{% if messages[0].role != 'system' %}{{ raise_exception('first message must be system') }}{% endif %}")

expect_errors = [
    (["--template", bad_template, "--messages", messages], "line 2, column 16: no filter named 'nosuch'"),
    (["--template", unclosed, "--messages", messages], "line 2, column 1: unclosed 'if' block"),
    (["--template", raising, "--messages", messages], "raise_exception: first message must be system"),
    (["--messages", bad_json], "bad.json: invalid JSON"),
    (["--messages", no_role], "messages[0] needs a string 'role'"),
    (["--messages", os.path.join(tmp, "missing.json")], "cannot read"),
]
for args, needle in expect_errors:
    r = run(*args)
    lines = r.stderr.strip().splitlines()
    if r.returncode != 1 or len(lines) != 1 or not lines[0].startswith("ringlm: error: ") or needle not in lines[0]:
        print(f"{args}: expected exit 1 with one error line containing {needle!r}; got exit {r.returncode}, stderr {r.stderr!r}")
        failures += 1

sys.exit(1 if failures else 0)
