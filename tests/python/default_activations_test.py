#!/usr/bin/env python3
"""One default numerics mode on every front end (issue #32): `int8x2` unless asked otherwise,
so the same request gives the same answer from run, chat, serve, extract and Python.

For each front end, three greedy requests on a test model (with the real tokenizer) are made
with no --activations, with --activations int8x2 and with --activations int8. Asserted:
- no flag == int8x2, request by request (a front end whose default drifted to int8 or f32
  would differ: random-weight logits are flat enough that 64 greedy tokens tell them apart);
- int8 differs from int8x2 in at least one request (else this test could not see a drift);
- run, chat, serve and Python give the same reply text to the same request.
Fails without the single default: a front end built on its own default would break the first
assertion as soon as that default moved."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

BUILD = os.environ.get("RINGLM_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
sys.path.insert(0, os.path.join(BUILD, "python"))
import ringlm  # noqa: E402

RINGLM = os.environ.get("RINGLM", os.path.join(BUILD, "ringlm"))
TMP = os.environ.get("RINGLM_TMP", "/tmp/ringlm_default_activations")
TOKENIZER = os.environ.get("RINGLM_TOKENIZER_DIR", "assets/gemma4-tokenizer")
PROMPTS = ["Write a poem", "Tell me about the sea", "What is 2+2?"]
MAX_TOKENS = 64
MODES = {"default": [], "int8x2": ["--activations", "int8x2"], "int8": ["--activations", "int8"]}
SCHEMA = {"type": "object", "properties": {"topic": {"type": "string", "maxLength": 48}}, "required": ["topic"],
          "additionalProperties": False}


def cli(model, args, stdin=None, ok_codes=(0,)):
    r = subprocess.run([RINGLM, *args, "-m", model, "-t", "2", "-n", str(MAX_TOKENS), "--temp", "0"], input=stdin,
                       capture_output=True, text=True, timeout=120)
    if r.returncode not in ok_codes:
        raise SystemExit(f"ringlm {' '.join(args)} failed: {r.stderr[-1500:]}")
    return r.stdout


def front_run(model, flags):
    return [cli(model, ["run", "-p", p, *flags]).rstrip("\n") for p in PROMPTS]


def front_chat(model, flags):
    return [cli(model, ["chat", *flags], stdin=p + "\n").rstrip("\n") for p in PROMPTS]


def front_extract(model, flags):
    with tempfile.TemporaryDirectory(dir=TMP) as tmp:
        schema, rows, out = (os.path.join(tmp, n) for n in ("schema.json", "in.jsonl", "out.jsonl"))
        json.dump(SCHEMA, open(schema, "w"))
        with open(rows, "w") as f:
            f.writelines(json.dumps({"text": p}) + "\n" for p in PROMPTS)
        cli(model, ["extract", "--schema", schema, "--input", rows, "--output", out, *flags], ok_codes=(0, 3))
        # Whole records (a row cut by -n is one too, exit 3), less the wall time; the
        # fingerprint names the mode, so a drifted default shows there as well.
        return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in open(out)]


def front_serve(model, flags):
    log = os.path.join(TMP, "serve.log")
    with open(log, "w") as err:
        proc = subprocess.Popen([RINGLM, "serve", "-m", model, "-t", "2", "--host", "127.0.0.1", "--port", "0", *flags],
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        port = None
        for _ in range(300):
            m = re.search(r" on http://127\.0\.0\.1:(\d+) ", open(log).read())
            if m:
                port = int(m.group(1))
                break
            if proc.poll() is not None:
                raise SystemExit(f"ringlm serve exited early: {open(log).read()[-1500:]}")
            time.sleep(0.1)
        if port is None:
            raise SystemExit(f"ringlm serve did not report its port: {open(log).read()[-1500:]}")
        replies = []
        for p in PROMPTS:
            body = json.dumps({"messages": [{"role": "user", "content": p}], "max_tokens": MAX_TOKENS,
                               "temperature": 0}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", body,
                                         {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=120) as r:
                replies.append(json.load(r)["choices"][0]["message"]["content"])
        return replies
    finally:
        proc.kill()
        proc.wait()


def front_python(model, flags):
    kw = {"activations": flags[1]} if flags else {}
    engine = ringlm.Engine(model, threads=2, **kw)
    return [engine.generate(p, max_tokens=MAX_TOKENS, temperature=0) for p in PROMPTS]


def main():
    os.makedirs(TMP, exist_ok=True)
    model = os.path.join(TMP, "tiny")
    if not os.path.exists(os.path.join(model, "config.json")):
        subprocess.run([RINGLM, "make-test-model", model, "--preset", "tiny", "--seed", "1", "--tokenizer", TOKENIZER],
                       check=True, capture_output=True)
    failures = []
    replies = {}
    fronts = {"run": front_run, "chat": front_chat, "serve": front_serve, "extract": front_extract,
              "python": front_python}
    for name, front in fronts.items():
        got = {mode: front(model, flags) for mode, flags in MODES.items()}
        replies[name] = got["default"]
        same = got["default"] == got["int8x2"]
        told_apart = got["int8"] != got["int8x2"]
        print(f"{'ok  ' if same else 'FAIL'} {name}: no --activations gives int8x2's replies")
        print(f"{'ok  ' if told_apart else 'FAIL'} {name}: int8 replies differ from int8x2's (the check can see a drift)")
        if not same:
            failures.append(f"{name}: default {got['default']!r} != int8x2 {got['int8x2']!r}")
        if not told_apart:
            failures.append(f"{name}: int8 and int8x2 gave the same replies; pick prompts that tell them apart")
    texts = {n: replies[n] for n in ("run", "chat", "serve", "python")}
    agree = all(v == texts["run"] for v in texts.values())
    print(f"{'ok  ' if agree else 'FAIL'} run, chat, serve and python give the same replies")
    if not agree:
        failures.append(f"front ends disagree: {texts!r}")
    if failures:
        raise SystemExit("FAILED:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
