#!/usr/bin/env bash
# Issue #19's acceptance run, repeatable: for each server binary given (the current build, and
# optionally an older one to compare with), a FRESH `ringlm serve` on --model, then
#   1. a quiet load (tools/load_test: plain, streamed, json_schema, completion, hang-ups,
#      malformed and oversized requests), and
#   2. the same load with the hostile clients of `load_test --attacks` mixed in, every flooding
#      attacker paced at --rate new connections per second (so both binaries face the same
#      volume), 500 idle connections, the 3,000-pattern schema, then --settle s idle.
# Binaries alternate per round (A B, then B A), so a host whose speed drifts favours neither.
# Prints one line per run: quiet and attack p50/p99 of the 200s, the p99 ratio (goal <= 2),
# the RSS rise from before the attack load to after --settle s idle (goal <= 50 MB),
# unexpected statuses, and the attempts/s each attacker reached (to check like-for-like).
#
#   tools/attack_pairs.sh --ringlm build/ringlm [--old /path/to/old/ringlm] --load-test build/tools/load_test \
#     --model build/demo-model [--rate 300] [--rounds 2] [--requests 120] [--clients 8] [--settle 20] [--out DIR] [--priority normal|rt]
#
# Attacker and server share the cores; the load_test process's CPU time during the attack run is
# printed. Keep other work off the machine (or at nice 19 with kernel.sched_autogroup_enabled=0,
# so nice applies across sessions). `--priority rt` (root) runs the server at chrt -r 50 and the
# load at chrt -r 60 instead.
set -euo pipefail

ringlm=build/ringlm old="" load_test=build/tools/load_test model=build/demo-model rate=300 rounds=2
requests=120 clients=8 settle=20 out="" port=18190 priority=normal
while (($#)); do
  case $1 in
    --ringlm) ringlm=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    --load-test) load_test=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --settle) settle=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --priority) priority=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "attack_pairs: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for b in "$ringlm" ${old:+"$old"} "$load_test"; do
  [[ -x $b ]] || { echo "attack_pairs: '$b' is not an executable" >&2; exit 2; }
done
[[ -e $model ]] || { echo "attack_pairs: --model '$model' does not exist" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "attack_pairs: --rounds must be a positive integer" >&2; exit 2; }
[[ $priority == normal || $priority == rt ]] || { echo "attack_pairs: --priority must be normal or rt" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "attack_pairs: needs /usr/bin/time (Debian package 'time')" >&2; exit 2; }
[[ -n $out ]] || out=$(mktemp -d "${TMPDIR:-/tmp}/attack_pairs.XXXXXX")
mkdir -p "$out"
rt=() rt_load=()
if [[ $priority == rt ]]; then
  # The load (normal clients and attackers) above the server, so the attackers' volume does not
  # depend on the server's threads. Under SCHED_RR the engine's spinning threads also starve the
  # server's own connection threads for a time slice at a time, which caps the attack volume the
  # server can even see; the default (normal priority) measures the server as it runs.
  rt=(chrt -r 50) rt_load=(chrt -r 60)
fi

one_run() {  # label binary -> one summary line; logs and JSON reports under $out
  local label=$1 bin=$2 tag
  tag=$out/$label.$(date +%H%M%S)
  "${rt[@]}" "$bin" serve --model "$model" --port "$port" --slots 4 --queue 16 --mask-budget-ms 2000 \
    > "$tag.serve.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { echo "attack_pairs: $label: serve exited (see $tag.serve.log)" >&2; exit 1; }
    sleep 0.1
  done
  local common=(--port "$port" --pid "$pid" --requests "$requests" --clients "$clients" --warmup 8)
  "${rt_load[@]}" "$load_test" "${common[@]}" --json "$tag.quiet.json" > "$tag.quiet.log" 2>&1 || true
  /usr/bin/time -f "%U %S %e" -o "$tag.attacker_cpu" "${rt_load[@]}" "$load_test" "${common[@]}" --attacks --idle-connections 500 --attack-rate "$rate" \
    --settle "$settle" --json "$tag.attack.json" > "$tag.attack.log" 2>&1 || true
  kill -0 "$pid" 2>/dev/null && alive=yes || alive=NO
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  python3 - "$label" "$tag" "$alive" <<'EOF'
import json, sys
label, tag, alive = sys.argv[1:]
q = json.load(open(tag + ".quiet.json"))
a = json.load(open(tag + ".attack.json"))
ratio = a["p99_s"] / q["p99_s"] if q["p99_s"] > 0 else float("nan")
rise = (a["rss_kib_settled"] - a["rss_kib_before"]) / 1024.0
u, s_, e = open(tag + ".attacker_cpu").read().split()[-3:]
rates = f"load_test CPU {float(u)+float(s_):.0f} s of {float(e):.0f} s | " + " ".join(f"{k}={v:.0f}/s" for k, v in sorted(a.get("attacks_per_second", {}).items()))
print(f"{label:8s} quiet p50/p99 {q['p50_s']*1e3:7.0f}/{q['p99_s']*1e3:7.0f} ms | attacks {a['p50_s']*1e3:7.0f}/"
      f"{a['p99_s']*1e3:7.0f} ms | p99 ratio {ratio:5.2f}x | RSS rise after settle {rise:+6.1f} MB | "
      f"unexpected {q['unexpected']}+{a['unexpected']} | server alive: {alive} | {rates}", flush=True)
EOF
}

echo "attack_pairs: rate $rate/s per flooding attacker, $requests requests x $clients clients, logs in $out"
for r in $(seq 1 "$rounds"); do
  if [[ -z $old ]]; then
    one_run new "$ringlm"
  elif ((r % 2)); then
    one_run new "$ringlm"; one_run old "$old"
  else
    one_run old "$old"; one_run new "$ringlm"
  fi
done
