#!/usr/bin/env bash
# ringlm against the CPU peers on the same host, file and run (issue #32): prefill, decode and
# aggregate batched decode of ringlm, llama.cpp and ik_llama.cpp, in rounds whose order
# alternates (ringlm first in odd rounds, last in even ones) so that a host whose bandwidth
# drifts with other tenants biases no side. Each round runs:
#   ringlm bench --sections speed[,batch]   on --model (packed directory, .gguf or HF dir)
#   llama-bench -p PREFILL -n DECODE        on --gguf, per peer (ik_llama.cpp with run-time repack, -rtr)
#   llama-batched-bench -npp P -ntg T -npl B1,B2   per peer, when --batch-sizes is given
# then prints the medians, and each ringlm figure as a ratio to the BEST peer of that figure.
#
#   tools/peer_pairs.sh --ringlm build/ringlm --model /work/models/e2b-packed --gguf /work/models/e2b.gguf \
#     --llama-bin /work/peers/llama.cpp/build/bin [--ik-bin /work/peers/ik_llama.cpp/build/bin] \
#     [--batch-sizes 8,16] [--pairs 3] [--threads 2] [--prefill 512] [--decode 128] \
#     [--batch-prompt 128] [--batch-decode 32] [--ringlm-args "--activations int8"] \
#     [--wrap "flock /work/bench.lock chrt -r 50"] [--tsv out.tsv]
#
# --llama-bin / --ik-bin are directories of already built binaries (llama-bench, and
# llama-batched-bench for --batch-sizes); nothing is downloaded or built here. --wrap prefixes
# every single measurement (not the whole script), so a shared lock is held a minute at a time.
# Needs python3 (to read the JSON and tables the tools write).
set -euo pipefail

ringlm=build/ringlm llama_bin="" ik_bin="" model="" gguf="" pairs=3 threads=2 prefill=512 decode=128 tsv=""
batch_sizes="" batch_prompt=128 batch_decode=32 ringlm_args="" wrap=""
while (($#)); do
  case $1 in
    --ringlm) ringlm=$2; shift 2 ;;
    --llama-bin) llama_bin=$2; shift 2 ;;
    --ik-bin) ik_bin=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --gguf) gguf=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --prefill) prefill=$2; shift 2 ;;
    --decode) decode=$2; shift 2 ;;
    --batch-sizes) batch_sizes=$2; shift 2 ;;
    --batch-prompt) batch_prompt=$2; shift 2 ;;
    --batch-decode) batch_decode=$2; shift 2 ;;
    --ringlm-args) ringlm_args=$2; shift 2 ;;
    --wrap) wrap=$2; shift 2 ;;
    --tsv) tsv=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "peer_pairs: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x $ringlm ]] || { echo "peer_pairs: --ringlm $ringlm is not an executable" >&2; exit 2; }
[[ -n $llama_bin || -n $ik_bin ]] || { echo "peer_pairs: give --llama-bin and/or --ik-bin (directories of built binaries)" >&2; exit 2; }
for dir in $llama_bin $ik_bin; do
  [[ -x $dir/llama-bench ]] || { echo "peer_pairs: $dir/llama-bench is not an executable" >&2; exit 2; }
  [[ -z $batch_sizes || -x $dir/llama-batched-bench ]] ||
    { echo "peer_pairs: --batch-sizes needs $dir/llama-batched-bench, not an executable" >&2; exit 2; }
done
[[ -e $model ]] || { echo "peer_pairs: --model '$model' does not exist" >&2; exit 2; }
[[ -f $gguf ]] || { echo "peer_pairs: --gguf '$gguf' is not a file" >&2; exit 2; }
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "peer_pairs: --pairs must be a positive integer" >&2; exit 2; }
[[ -z $batch_sizes || $batch_sizes =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
  { echo "peer_pairs: --batch-sizes must be a comma-separated list of positive integers" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/peer_pairs.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$work/results.tsv
: > "$results"  # rows: round, side, figure, value

record() {  # side, then "figure value" lines on stdin
  while read -r fig val; do printf '%s\t%s\t%s\t%s\n' "$round" "$1" "$fig" "$val" >> "$results"; done
}

run_ringlm() {
  local sections=speed
  [[ -z $batch_sizes ]] || sections=speed,batch
  # shellcheck disable=SC2086  # --wrap and --ringlm-args are word lists
  $wrap "$ringlm" bench --model "$model" --threads "$threads" --sections "$sections" --prefill-tokens "$prefill" \
    --decode-tokens "$decode" --growth-tokens 0 --batch-sizes "${batch_sizes:-1}" --batch-prompt-tokens "$batch_prompt" \
    --batch-decode-tokens "$batch_decode" --batch-extract-parallel 1 --batch-extract-rows 1 $ringlm_args \
    --json "$work/r.json" > "$work/r.log" 2>&1 ||
    { echo "peer_pairs: ringlm bench failed:" >&2; tail -5 "$work/r.log" >&2; exit 1; }
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1])); s = r["speed"]
print("prefill", s["prefill_tok_s"]); print("decode", s["decode_tok_s"]); print("floor", s["floor_tok_s"])
for d in r.get("batch", {}).get("decode", []):
    print("B%d" % d["batch"], d["aggregate_tok_s"])' "$work/r.json" | record ringlm
}

run_peer() {  # name, bin dir, extra llama-bench flags, extra llama-batched-bench flags
  local name=$1 dir=$2 bench_flags=$3 batched_flags=$4
  # shellcheck disable=SC2086
  $wrap "$dir/llama-bench" -m "$gguf" -t "$threads" -p "$prefill" -n "$decode" -r 1 -o json $bench_flags > "$work/l.json" 2> "$work/l.log" ||
    { echo "peer_pairs: $name llama-bench failed:" >&2; tail -5 "$work/l.log" >&2; exit 1; }
  python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
print("prefill", [r["avg_ts"] for r in rows if r["n_prompt"] > 0 and r["n_gen"] == 0][0])
print("decode", [r["avg_ts"] for r in rows if r["n_gen"] > 0 and r["n_prompt"] == 0][0])' "$work/l.json" | record "$name"
  [[ -n $batch_sizes ]] || return 0
  local ctx
  ctx=$(( (batch_prompt + batch_decode) * $(tr , '\n' <<< "$batch_sizes" | sort -n | tail -1) + 64 ))
  # shellcheck disable=SC2086
  $wrap "$dir/llama-batched-bench" -m "$gguf" -t "$threads" -c "$ctx" -b 2048 -ub 512 -npp "$batch_prompt" \
    -ntg "$batch_decode" -npl "$batch_sizes" $batched_flags > "$work/b.md" 2>&1 ||
    { echo "peer_pairs: $name llama-batched-bench failed:" >&2; tail -5 "$work/b.md" >&2; exit 1; }
  # The markdown table: | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |
  python3 -c '
import sys
for line in open(sys.argv[1]):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(c) >= 8 and c[0].isdigit():
        print(f"B{c[2]}", c[7])' "$work/b.md" | record "$name"
}

peers=()
[[ -z $llama_bin ]] || peers+=(llama.cpp)
[[ -z $ik_bin ]] || peers+=(ik_llama.cpp)
run_side() {
  case $1 in
    ringlm) run_ringlm ;;
    llama.cpp) run_peer llama.cpp "$llama_bin" "" "" ;;
    ik_llama.cpp) run_peer ik_llama.cpp "$ik_bin" "-rtr 1" "-rtr" ;;  # run-time repack; a bare flag in batched-bench
  esac
}
for ((round = 1; round <= pairs; round++)); do
  if ((round % 2)); then order=(ringlm "${peers[@]}"); else order=("${peers[@]}" ringlm); fi
  for side in "${order[@]}"; do run_side "$side"; done
  awk -F'\t' -v r="$round" '$1 == r { printf "%s%s %s %.2f", (n++ ? ", " : "round " r ": "), $2, $3, $4 } END { print "" }' "$results"
done

python3 - "$results" "$prefill" "$decode" "$threads" "$ringlm_args" <<'EOF'
import collections, statistics, sys
vals = collections.defaultdict(list)
for line in open(sys.argv[1]):
    _, side, fig, v = line.rstrip("\n").split("\t")
    vals[(side, fig)].append(float(v))
sides = sorted({s for s, _ in vals}, key=lambda s: (s != "ringlm", s))
figs = [f for f in ("prefill", "decode") + tuple(sorted({f for _, f in vals if f.startswith("B")}, key=lambda f: int(f[1:])))
        if any((s, f) in vals for s in sides)]
med = {k: statistics.median(v) for k, v in vals.items()}
names = {"prefill": f"prefill {sys.argv[2]} tok/s", "decode": f"decode tok/s ({sys.argv[3]} tokens)"}
print(f"medians of {len(next(iter(vals.values())))} rounds, {sys.argv[4]} threads, ringlm flags: {sys.argv[5] or '(default)'}")
print("| | " + " | ".join(sides) + " | ringlm / best peer |")
print("|---" * (len(sides) + 2) + "|")
for f in figs:
    peers = [med[(s, f)] for s in sides if s != "ringlm" and (s, f) in med]
    ratio = f"{med[('ringlm', f)] / max(peers):.2f}x" if peers and ("ringlm", f) in med else "—"
    cells = [f"{med[(s, f)]:.1f}" if (s, f) in med else "—" for s in sides]
    print(f"| {names.get(f, 'aggregate decode ' + f.replace('B', 'B=') + ' tok/s')} | " + " | ".join(cells) + f" | {ratio} |")
if ("ringlm", "floor") in med:
    print(f"ringlm decode is {100 * med[('ringlm', 'decode')] / med[('ringlm', 'floor')]:.0f} % of the "
          f"{med[('ringlm', 'floor')]:.1f} tok/s floor `bench` measures")
EOF
[[ -z $tsv ]] || cp "$results" "$tsv"
