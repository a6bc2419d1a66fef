"""Differential test of ringlm's Jinja interpreter against @huggingface/jinja (npm).

Random conversations (system/user/assistant/tool messages, tool calls with nested JSON
arguments, tool lists, thinking on/off) are rendered with the real Gemma 4 chat template and
with the generic templates in tests/chat/templates by the JavaScript reference and by
`ringlm template --cases`; every output must match byte for byte, and where the reference
raises an error ringlm must raise one too.

Env: RINGLM, RINGLM_SOURCE_DIR, RINGLM_TOKENIZER_DIR, RINGLM_TMP (set by CTest).
Optional: JINJA_DIFF_SEED, JINJA_DIFF_COUNT to reproduce or widen a run.
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

node_modules = os.path.join(source, "tests", "js", "node_modules")
if not os.path.isdir(os.path.join(node_modules, "@huggingface", "jinja")):
    sys.exit("jinja_differential_test: @huggingface/jinja is not installed; run `cd tests/js && npm ci`")
node = shutil.which("node")
if not node:
    sys.exit("jinja_differential_test: node is not on PATH")

seed = int(os.environ.get("JINJA_DIFF_SEED", "20261130"))
count = int(os.environ.get("JINJA_DIFF_COUNT", "400"))
model_dir = os.environ["RINGLM_TOKENIZER_DIR"]
templates = {
    "gemma4": os.path.join(model_dir, "chat_template.jinja"),
    "generic_tools": os.path.join(source, "tests", "chat", "templates", "generic_tools.jinja"),
    "generic_features": os.path.join(source, "tests", "chat", "templates", "generic_features.jinja"),
    "generic_whitespace": os.path.join(source, "tests", "chat", "templates", "generic_whitespace.jinja"),
}

subprocess.run([node, os.path.join(source, "tests", "chat", "jinja_reference.js"), "--node-modules", node_modules,
                "--out", tmp, "--seed", str(seed), "--count", str(count)]
               + [f"{name}={path}" for name, path in templates.items()], check=True)

cases_path = os.path.join(tmp, "cases.jsonl")
contexts = [json.loads(line)["context"] for line in open(cases_path, encoding="utf-8") if line.strip()]
failures = 0
for name, path in templates.items():
    expected = [json.loads(line) for line in open(os.path.join(tmp, name + ".expected.jsonl"), encoding="utf-8")
                if line.strip()]
    run = subprocess.run([ringlm, "template", "--model", model_dir, "--template", path, "--cases", cases_path],
                         capture_output=True, text=True, encoding="utf-8")
    if run.returncode != 0:
        print(f"{name}: ringlm failed (exit {run.returncode}):\n{run.stderr}")
        failures += 1
        continue
    actual = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    assert len(actual) == len(expected) == len(contexts), (len(actual), len(expected), len(contexts))
    errors = mismatches = 0
    for i, (exp, act) in enumerate(zip(expected, actual)):
        if "error" in exp:
            errors += 1
            if "error" not in act:
                mismatches += 1
                if mismatches <= 3:
                    print(f"{name} case {i}: reference raised {exp['error']!r} but ringlm rendered")
                    print("  context:", json.dumps(contexts[i], ensure_ascii=False)[:2000])
            continue
        if act.get("text") != exp["text"]:
            mismatches += 1
            if mismatches <= 3:
                print(f"{name} case {i}: output differs")
                if "error" in act:
                    print("  ringlm error:", act["error"])
                else:
                    a, e = act["text"], exp["text"]
                    k = next((j for j in range(min(len(a), len(e))) if a[j] != e[j]), min(len(a), len(e)))
                    print(f"  first difference at character {k}:")
                    print("  expected:", repr(e[max(0, k - 80):k + 80]))
                    print("  actual:  ", repr(a[max(0, k - 80):k + 80]))
                print("  context:", json.dumps(contexts[i], ensure_ascii=False)[:2000])
    print(f"{name}: {len(contexts)} cases, {errors} reference errors, {mismatches} mismatches")
    # The generator avoids inputs the reference cannot render; a flood of errors would mean
    # the comparison silently covers little.
    if errors > len(contexts) // 10:
        print(f"{name}: too many reference errors ({errors}); generator or template is broken")
        failures += 1
    failures += mismatches
print(f"seed {seed}: {'FAIL' if failures else 'ok'}")
sys.exit(1 if failures else 0)
