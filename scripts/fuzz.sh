#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, -O2 with assertions on: several times the
# executions per second of -O0) in build-fuzz and runs each for SECONDS (default 20) from its
# seed corpus in fuzz/corpus/<target>, RINGLM_JOBS (default 2) targets
# at a time. New inputs go to a scratch copy, never into the repository. Prints executions
# per target; exits non-zero on any finding (crash, sanitizer report, timeout, out-of-memory),
# leaving the reproducer in the scratch dir. RINGLM_FUZZ_BUILD_DIR=build-asan reuses the
# sanitizer build, which test-sanitizers.sh configures with the fuzz targets in it.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(gguf safetensors tokenizer_json bpe_encode chat_template json_schema http_body http_framing jinja_chain image_decode audio_decode admission assistant_gguf)
build=${RINGLM_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${RINGLM_JOBS:-2}

start=$(date +%s)
cache="$build/CMakeCache.txt"
if [[ -f $cache ]] && grep -q '^RINGLM_FUZZ:BOOL=ON' "$cache" && grep -q '^RINGLM_SANITIZE:BOOL=ON' "$cache"; then
  # The sanitizer build with the fuzz targets in it (scripts/test-sanitizers.sh; CI passes
  # RINGLM_FUZZ_BUILD_DIR=build-asan): kept as configured, so its objects are reused.
  :
else
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DRINGLM_FUZZ=ON -DRINGLM_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g" >/dev/null
fi
cmake --build "$build" -j"$jobs" --target $(printf 'fuzz_%s ' "${targets[@]}")
built=$(date +%s)
echo "fuzz: build took $((built - start)) s"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/ringlm-fuzz.XXXXXX")
failed=()
# One target per core at a time (libFuzzer runs one thread): each still gets SECONDS. A single
# allocation over 1 GB is a finding of its own (an input of a few KB must never cause one; the
# PNG text-chunk length bomb did, and its seed keeps it so), apart from the 2 GB RSS limit.
run_target() {
  local t=$1
  mkdir -p "$scratch/$t/corpus" "$scratch/$t/artifacts"
  cp -r "fuzz/corpus/$t/." "$scratch/$t/corpus/"
  # TMPDIR: the targets that need a file write it there (fuzz/fuzz_util.h), so it goes with the scratch.
  if TMPDIR="$scratch/$t" "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -print_final_stats=1 \
       -artifact_prefix="$scratch/$t/artifacts/" "$scratch/$t/corpus" >"$scratch/$t/log" 2>&1; then
    echo ok >"$scratch/$t/status"
  else
    echo FAILED >"$scratch/$t/status"
  fi
}
running=0
for t in "${targets[@]}"; do
  run_target "$t" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
for t in "${targets[@]}"; do
  log="$scratch/$t/log"
  status=$(cat "$scratch/$t/status" 2>/dev/null || echo FAILED)
  [[ $status == ok ]] || failed+=("$t")
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  printf 'fuzz_%-16s %s  %s executions in %s s  (%s)\n' "$t" "$status" "$execs" "$seconds" "${cov:-cov: ?}"
  if [[ $status != ok ]]; then
    grep -E 'ERROR|SUMMARY|finding|Test unit written' "$log" | head -20 || true
  fi
done
echo "fuzz: total $(( $(date +%s) - start )) s"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: FINDINGS in ${failed[*]} (logs and reproducers under $scratch)"
  exit 1
fi
rm -rf "$scratch"
