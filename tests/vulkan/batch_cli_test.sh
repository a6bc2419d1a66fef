#!/usr/bin/env bash
# Continuous batching with --device vulkan on the tiny model (lavapipe in CI), with the
# default device settings (the tiled q4_0 matmul at its default threshold): greedy `extract`
# of ten rows gives the CPU f32 path's records, with --parallel 1 and 8 (eight decoding rows
# per step; the guided rows' subset LM head on the device, one step per row, between the
# batched steps); `serve --slots 8` on the device answers eight concurrent greedy requests
# with the text and the token logprobs (to the last bit of the float) each gives alone.
# A row's bits depend on the size of the chunk that ran it (>= 8 rows: the tiled matmul), so
# the serve prompts are chosen to run in the same chunks alone and together: each is over 8
# tokens after the <bos> a reused slot shares, no two share a first word, and the prefix
# cache is off (a cached 16-token block would start a prompt's last chunk elsewhere).
# Passes without running anything where the machine has no Vulkan device (says so).
set -euo pipefail
source "$(dirname "$0")/vulkan_lib.sh"
rm -f cpu.jsonl gpu1.jsonl gpu8.jsonl ex.log
[[ -f model/config.json ]] || "$RINGLM" make-test-model model --preset tiny --seed 3 2>/dev/null
printf '%s\n' '{"id":"a","text":"my order never arrived"}' '{"id":"b","text":"refund please, the box was empty"}' \
  '{"id":"c","text":"hello"}' '{"id":"d","text":"the app crashes on start and I lost my data"}' \
  '{"id":"e","text":"where is my invoice"}' '{"id":"f","text":"wrong size, exchange it"}' \
  '{"id":"g","text":"charged twice for one order"}' '{"id":"h","text":"cancel my subscription now"}' \
  '{"id":"i","text":"the courier left it at the wrong door"}' '{"id":"j","text":"thanks, all good"}' >rows.jsonl
schema="$RINGLM_SOURCE_DIR/examples/ticket.schema.json"
ex() { "$RINGLM" extract --model model --schema "$schema" --input rows.jsonl --max-tokens 300 --no-progress "$@" 2>>ex.log; }
ex --output cpu.jsonl --activations f32 --parallel 1
ex --output gpu1.jsonl --device vulkan --parallel 1
ex --output gpu8.jsonl --device vulkan --parallel 8
"$RINGLM_PYTHON" - <<'PY'
import json
def load(p):
    recs = {}
    for line in open(p).read().splitlines():
        r = json.loads(line); r.pop("seconds", None); r.pop("fingerprint", None); recs[r["id"]] = r  # the fingerprint names the device
    return recs
cpu, g1, g8 = load("cpu.jsonl"), load("gpu1.jsonl"), load("gpu8.jsonl")
assert len(cpu) == 10 and any(r["ok"] for r in cpu.values()), cpu
assert g1 == cpu, ("vulkan --parallel 1 differs from the CPU", g1, cpu)
assert g8 == g1, ("vulkan --parallel 8 differs from --parallel 1", g8, g1)
PY

log=serve.log
: >"$log"
"$RINGLM" serve --model model --device vulkan --slots 8 --prefix-cache-mb 0 --host 127.0.0.1 --port 0 2>"$log" &
pid=$!
trap 'kill -9 $pid 2>/dev/null || true' EXIT
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's/.* on http:\/\/127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$log" | head -n1)
  [[ -n "$port" ]] && break
  kill -0 $pid 2>/dev/null || { echo "server exited early:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.1
done
[[ -n "$port" ]] || { echo "server did not report its port:" >&2; cat "$log" >&2; exit 1; }
"$RINGLM_PYTHON" - "$port" <<'PY'
import json, sys, threading, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/v1/completions"
def ask(prompt):
    body = json.dumps({"prompt": prompt, "max_tokens": 24, "temperature": 0, "logprobs": 2}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    c = json.load(urllib.request.urlopen(req, timeout=300))["choices"][0]
    return c["text"], c["logprobs"]["token_logprobs"], c["logprobs"]["top_logprobs"]
prompts = ["the quick brown fox", "a list of colours: red,", "once upon a time", "dear customer, we",
           "1, 2, 3, 4, 5,", "weather report for today:", "error: file not found", "my favourite food is"]
alone = [ask(p) for p in prompts]
together = [None] * len(prompts)
def worker(i): together[i] = ask(prompts[i])
threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(prompts))]
for t in threads: t.start()
for t in threads: t.join()
assert all(a[0] and len(a[1]) == 24 for a in alone), alone
for i, (t, a) in enumerate(zip(together, alone)):
    assert t == a, ("request %d batched differs from alone" % i, t, a)
PY
kill -TERM $pid
wait $pid || { echo "serve exited with $? after SIGTERM" >&2; cat "$log" >&2; exit 1; }
trap - EXIT
echo "batch_cli_test: ok"
