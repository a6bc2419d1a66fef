#!/usr/bin/env bash
# Builds ringlm with AddressSanitizer + UndefinedBehaviorSanitizer (clang) in build-asan/,
# the fuzz targets with it, and runs every unit test (ctest label `unit`) under it. Any report fails the run. -O0, with
# the kernels, vision and audio at -O1 (src/CMakeLists.txt): about half the build time of -O1.
set -euo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# RINGLM_FUZZ=ON: the libFuzzer targets are built from the same instrumented objects
# (fuzz/CMakeLists.txt), so `RINGLM_FUZZ_BUILD_DIR=build-asan scripts/fuzz.sh` compiles
# nothing more; a second, separate fuzz build cost CI about two minutes.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="-O0" -DRINGLM_SANITIZE=ON -DRINGLM_FUZZ=ON >/dev/null
# Only the GoogleTest binaries and the fuzz targets: the CLI, tools and benchmarks are not run here.
cmake --build build-asan -j"$(nproc)" --target unit_tests fuzz_all
ctest --test-dir build-asan -L unit --output-on-failure -j"$(nproc)" "$@"
