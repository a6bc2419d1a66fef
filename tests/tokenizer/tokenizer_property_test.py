"""Property test: ringlm's tokenizer against the reference @huggingface/tokenizers (npm).

Thousands of random strings (mixed scripts, emoji, control characters, whitespace runs,
special-token look-alikes) are encoded by the reference (tests/js/tokenizer_property.mjs);
`ringlm tokenize --jsonl` must give identical ids and `ringlm detokenize --jsonl` must give
the text back (the reference's decode too). Needs node and `cd tests/js && npm ci`.
"""
import json
import os
import shutil
import subprocess
import sys

COUNT = int(os.environ.get("RINGLM_TOKENIZER_PROPERTY_COUNT", "4000"))
SEED = int(os.environ.get("RINGLM_TOKENIZER_PROPERTY_SEED", "20261130"))


def main() -> int:
    ringlm = os.environ["RINGLM"]
    source = os.environ["RINGLM_SOURCE_DIR"]
    tokdir = os.environ["RINGLM_TOKENIZER_DIR"]
    tmp = os.environ["RINGLM_TMP"]
    os.makedirs(tmp, exist_ok=True)
    js_dir = os.path.join(source, "tests", "js")
    if shutil.which("node") is None or not os.path.isdir(os.path.join(js_dir, "node_modules", "@huggingface", "tokenizers")):
        print("FAIL: the reference needs node and `cd tests/js && npm ci`", file=sys.stderr)
        return 1

    cases_path = os.path.join(tmp, "cases.jsonl")
    subprocess.run(["node", os.path.join(js_dir, "tokenizer_property.mjs"), "--tokenizer", tokdir,
                    "--count", str(COUNT), "--seed", str(SEED), "--out", cases_path], check=True, cwd=js_dir)
    cases = [json.loads(line) for line in open(cases_path, encoding="utf-8") if line.strip()]
    assert len(cases) == COUNT, len(cases)

    enc = subprocess.run([ringlm, "tokenize", "--model", tokdir, "--jsonl", cases_path],
                         check=True, capture_output=True, text=True).stdout.rstrip("\n").split("\n")
    assert len(enc) == len(cases), (len(enc), len(cases))
    ours = [json.loads(line) for line in enc]

    ids_path = os.path.join(tmp, "ids.jsonl")
    with open(ids_path, "w", encoding="utf-8") as f:
        for ids in ours:
            f.write(json.dumps({"ids": ids}) + "\n")
    dec = subprocess.run([ringlm, "detokenize", "--model", tokdir, "--jsonl", ids_path],
                         check=True, capture_output=True, text=True).stdout.rstrip("\n").split("\n")
    decoded = [json.loads(line) for line in dec]

    failures = 0
    for case, ids, text in zip(cases, ours, decoded):
        problems = []
        if ids != case["ids"]:
            problems.append(f"ids differ:\n    ours {ids}\n    ref  {case['ids']}")
        # A literal "▁" in the input decodes as a space (the decoder cannot tell it from an
        # escaped space), in the reference too; every other string must round-trip exactly.
        if "\u2581" not in case["text"] and text != case["text"]:
            problems.append(f"round trip gives {text!r}")
        if text != case["js_decoded"]:
            problems.append(f"decode differs from the reference's {case['js_decoded']!r}: {text!r}")
        if problems:
            failures += 1
            if failures <= 10:
                print(f"text {case['text']!r}:", *problems, sep="\n  ", file=sys.stderr)
    total_chars = sum(len(c["text"]) for c in cases)
    print(f"{len(cases)} random strings ({total_chars} characters), {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
