#!/usr/bin/env bash
# Side-by-side prefill and decode figures for ringlm and llama.cpp on the same machine, in
# alternating pairs (ringlm first in odd pairs, llama.cpp first in even ones), so that a host
# whose bandwidth drifts with other tenants biases neither side. Each pair runs:
#   ringlm bench --sections speed      on --model (a packed directory, a .gguf or a HF dir)
#   llama-bench -p PREFILL -n DECODE   on --gguf (the file `ringlm convert --type q4_0` writes)
# and the script prints one line per pair, then the medians and the ratios (ringlm / llama.cpp).
#
#   tools/peer_pairs.sh --ringlm build/ringlm --llama-bench /work/llama.cpp/build/bin/llama-bench \
#     --model /work/models/e2b/packed --gguf /work/models/e2b/e2b.gguf [--pairs 5] [--threads 2] \
#     [--prefill 512] [--decode 128] [--tsv out.tsv]
#
# Needs python3 (to read the JSON both tools write). Nothing is downloaded or built here:
# build llama.cpp as BENCHMARKS.md says ("Peer: llama.cpp", in the AMD EPYC section).
set -euo pipefail

ringlm=build/ringlm llama_bench="" model="" gguf="" pairs=5 threads=2 prefill=512 decode=128 tsv=""
while (($#)); do
  case $1 in
    --ringlm) ringlm=$2; shift 2 ;;
    --llama-bench) llama_bench=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --gguf) gguf=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --prefill) prefill=$2; shift 2 ;;
    --decode) decode=$2; shift 2 ;;
    --tsv) tsv=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "peer_pairs: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x $ringlm ]] || { echo "peer_pairs: --ringlm $ringlm is not an executable" >&2; exit 2; }
[[ -x $llama_bench ]] || { echo "peer_pairs: --llama-bench '$llama_bench' is not an executable" >&2; exit 2; }
[[ -e $model ]] || { echo "peer_pairs: --model '$model' does not exist" >&2; exit 2; }
[[ -f $gguf ]] || { echo "peer_pairs: --gguf '$gguf' is not a file" >&2; exit 2; }
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "peer_pairs: --pairs must be a positive integer" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/peer_pairs.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$work/results.tsv
printf 'pair\tringlm_prefill\tringlm_decode\tringlm_floor\tllama_prefill\tllama_decode\n' > "$results"

run_ringlm() {  # -> "prefill decode floor"
  "$ringlm" bench --model "$model" --threads "$threads" --sections speed --prefill-tokens "$prefill" \
    --decode-tokens "$decode" --growth-tokens 0 --json "$work/r.json" > "$work/r.log" 2>&1 ||
    { echo "peer_pairs: ringlm bench failed:" >&2; tail -5 "$work/r.log" >&2; exit 1; }
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["speed"]; print(s["prefill_tok_s"], s["decode_tok_s"], s["floor_tok_s"])' "$work/r.json"
}
run_llama() {  # -> "prefill decode"
  "$llama_bench" -m "$gguf" -t "$threads" -p "$prefill" -n "$decode" -r 1 -o json > "$work/l.json" 2> "$work/l.log" ||
    { echo "peer_pairs: llama-bench failed:" >&2; tail -5 "$work/l.log" >&2; exit 1; }
  python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
pp = [r["avg_ts"] for r in rows if r["n_prompt"] > 0 and r["n_gen"] == 0]
tg = [r["avg_ts"] for r in rows if r["n_gen"] > 0 and r["n_prompt"] == 0]
print(pp[0], tg[0])' "$work/l.json"
}

for ((i = 1; i <= pairs; i++)); do
  if ((i % 2)); then r=$(run_ringlm); l=$(run_llama); else l=$(run_llama); r=$(run_ringlm); fi
  read -r rp rd rf <<< "$r"
  read -r lp ld <<< "$l"
  printf '%d\t%s\t%s\t%s\t%s\t%s\n' "$i" "$rp" "$rd" "$rf" "$lp" "$ld" >> "$results"
  printf 'pair %d: ringlm prefill %.1f decode %.2f tok/s (floor %.1f) | llama.cpp prefill %.1f decode %.2f tok/s\n' \
    "$i" "$rp" "$rd" "$rf" "$lp" "$ld"
done

python3 - "$results" "$prefill" "$decode" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
col = lambda k: [float(r[k]) for r in rows]
m = {k: statistics.median(col(k)) for k in rows[0] if k != "pair"}
pre = [float(r["ringlm_prefill"]) / float(r["llama_prefill"]) for r in rows]
dec = [float(r["ringlm_decode"]) / float(r["llama_decode"]) for r in rows]
print(f"median of {len(rows)} pairs, prefill {sys.argv[2]} tokens, decode {sys.argv[3]} tokens:")
print(f"  ringlm    prefill {m['ringlm_prefill']:.1f} tok/s, decode {m['ringlm_decode']:.2f} tok/s "
      f"({100 * m['ringlm_decode'] / m['ringlm_floor']:.0f} % of the {m['ringlm_floor']:.1f} tok/s floor)")
print(f"  llama.cpp prefill {m['llama_prefill']:.1f} tok/s, decode {m['llama_decode']:.2f} tok/s")
print(f"  ratio per pair (ringlm / llama.cpp): prefill {min(pre):.2f}-{max(pre):.2f}x (median {statistics.median(pre):.2f}x), "
      f"decode {min(dec):.2f}-{max(dec):.2f}x (median {statistics.median(dec):.2f}x)")
EOF
[[ -z $tsv ]] || cp "$results" "$tsv"
