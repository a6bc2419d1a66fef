#!/usr/bin/env bash
# Cross-builds the kernels and the stand-alone checks (tests/kernels/cross/neon_check.cpp:
# quantized kernels; tests/kernels/cross/attention_check.cpp: attention) for aarch64 with
# Debian's g++-aarch64-linux-gnu and runs them under qemu-aarch64-static, so the NEON paths
# are tested on an x86 CI host. The kernel sources are compiled once for both checks. Skips
# (exit 0, with a message) when the cross compiler or qemu is not installed (apt-get install
# g++-aarch64-linux-gnu qemu-user-static).
set -euo pipefail
src="${RINGLM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
cxx="${RINGLM_AARCH64_CXX:-aarch64-linux-gnu-g++}"
qemu="${RINGLM_QEMU_AARCH64:-qemu-aarch64-static}"
if ! command -v "$cxx" >/dev/null || ! command -v "$qemu" >/dev/null; then
  echo "SKIP: $cxx or $qemu not installed (apt-get install g++-aarch64-linux-gnu qemu-user-static)"
  exit 0
fi
out="${RINGLM_TMP:-$(mktemp -d)}"
mkdir -p "$out/obj"
# The kernel layer (the float reference kernels that need io/ stay out); the dispatch
# references every kernel table, so all of them come along.
kernel_srcs=()
for pattern in attention ref_ops ref_parallel activation_ q4_ q4k_ q6k_ q8_ q8p16_ ggml_quant ggml_kernels \
  cpu_features dispatch thread_pool mem_read; do
  kernel_srcs+=("$src"/src/kernels/${pattern}*.cpp)
done
# -O1 keeps the cross build quick on a 2-core CI box; static so qemu needs no sysroot.
flags=(-std=c++20 -O1 -Wall -Wextra -Wno-unused-parameter -I "$src/src")
objs=()
pids=()
for f in "${kernel_srcs[@]}"; do
  o="$out/obj/$(basename "$f" .cpp).o"
  objs+=("$o")
  "$cxx" "${flags[@]}" -c "$f" -o "$o" &
  pids+=($!)
  if (( ${#pids[@]} >= 2 )); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done
for check in neon_check attention_check; do
  "$cxx" "${flags[@]}" -static -pthread "${objs[@]}" "$src/tests/kernels/cross/$check.cpp" -o "$out/$check"
  echo "== $check"
  "$qemu" "$out/$check"
done
