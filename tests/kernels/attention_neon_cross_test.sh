#!/usr/bin/env bash
# Cross-builds the attention kernels (attention*.cpp, with the dispatch and pool they use)
# and tests/kernels/cross/attention_check.cpp for aarch64 with Debian's g++-aarch64-linux-gnu
# and runs it under qemu-aarch64-static, so the NEON attention path is tested on an x86 CI
# host. Skips (exit 0, with a message) when the cross compiler or qemu is not installed.
set -euo pipefail
src="${RINGLM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
cxx="${RINGLM_AARCH64_CXX:-aarch64-linux-gnu-g++}"
qemu="${RINGLM_QEMU_AARCH64:-qemu-aarch64-static}"
if ! command -v "$cxx" >/dev/null || ! command -v "$qemu" >/dev/null; then
  echo "SKIP: $cxx or $qemu not installed (apt-get install g++-aarch64-linux-gnu qemu-user-static)"
  exit 0
fi
out="${RINGLM_TMP:-$(mktemp -d)}"
mkdir -p "$out"
# The dispatch references every kernel table, so the quantized-kernel layer comes along.
kernel_srcs=()
for pattern in attention ref_ops ref_parallel activation_ q4_ q4k_ q6k_ q8_ q8p16_ ggml_quant ggml_kernels cpu_features dispatch \
  thread_pool mem_read; do
  kernel_srcs+=("$src"/src/kernels/${pattern}*.cpp)
done
# -O1 keeps the cross build quick on a 2-core CI box; static so qemu needs no sysroot.
"$cxx" -std=c++20 -O1 -static -pthread -Wall -Wextra -Wno-unused-parameter -I "$src/src" \
  "${kernel_srcs[@]}" "$src/tests/kernels/cross/attention_check.cpp" -o "$out/attention_check"
"$qemu" "$out/attention_check"
