#!/usr/bin/env bash
# The Vulkan backend on a lent GPU machine (issue #31, docs/backends.md). Prepared; first run
# waits for a session that is lent a device machine (/work/.library/device/README.md).
#
# The device machine has none of ringlm's build dependencies and no Vulkan loader, so the
# binary travels: `pack` (here) builds ringlm with Vulkan and copies into .gpu/ the binary,
# every shared library it links, Debian's dynamic loader (so the host's older or newer glibc
# does not matter) and the Vulkan loader, which ringlm opens at run time. `run` (there) then
# starts ringlm through that loader.
#
#   here:   tools/gpu_bench.sh pack                   (in the checkout the device tool sends)
#   there:  device run, carry [".gpu"], timeout_s 540:
#           bash tools/gpu_bench.sh run
#
# `run` makes a full-size random E2B (make-test-model, then convert to a packed directory, so
# nothing large travels and loads only map), checks the Vulkan logits against the CPU's on
# the same ids (prefill and decode; cosine and argmax per row), then benches decode and
# prefill of 512 and 4096 tokens with --device vulkan and --device cpu on the same machine,
# then aggregate decode at B=1/8/32/64 (`bench --sections batch`, continuous batching) on
# both, then the int8 dot-product path (--activations int8) with RINGLM_VULKAN_INT8=1 and =0
# (its A/B) and its logits against the CPU's, then prefill with the tiled q4_0 matmul off
# (RINGLM_VULKAN_TILED_MIN_ROWS=0: the row shader; the default runs tiled) and with binary16
# tiles (RINGLM_VULKAN_FP16=1), whose logits are also checked. Figures go to $OUT (the device tool's output folder) or ./gpu-bench-out.
#
#   here, on lavapipe:  tools/gpu_bench.sh smoke   (pack, then the same run on the tiny
#                       preset with small sizes: checks the script end to end, no figures)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}

pack() {
  export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGLM_VULKAN=ON >/dev/null
  cmake --build build -j"$(nproc)" --target ringlm
  ./build/ringlm --version | grep -q 'Vulkan backend: compiled in' ||
    { echo "gpu_bench: build/ringlm was built without Vulkan" >&2; exit 1; }
  rm -rf .gpu && mkdir -p .gpu/lib
  cp build/ringlm .gpu/
  ldd build/ringlm | awk '/=> \// {print $3}' | while read -r lib; do cp -L "$lib" .gpu/lib/; done
  cp -L /lib64/ld-linux-x86-64.so.2 .gpu/lib/
  cp -L "$(ldconfig -p | awk '/libvulkan.so.1 .*x86-64/ {print $NF; exit}')" .gpu/lib/libvulkan.so.1
  exclude=$(git rev-parse --git-path info/exclude)
  grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
  du -sh .gpu
  echo "gpu_bench: packed; now: device run 'bash tools/gpu_bench.sh run' with carry [\".gpu\"]"
}

# compare CPU.bin DEVICE.bin MIN_COSINE MIN_ARGMAX_EQUAL LABEL: 96 rows of float32 logits each.
compare() {
  python3 - "$@" <<'EOF'
# Plain Python (the device machine may have no numpy).
import array, math, sys
def rows(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    n = len(a) // 96
    return [a[i * n:(i + 1) * n] for i in range(96)]
cos_min, cos_sum, same = 1.0, 0.0, 0
for x, y in zip(rows(sys.argv[1]), rows(sys.argv[2])):
    xy = sum(p * q for p, q in zip(x, y))
    c = xy / math.sqrt(sum(p * p for p in x) * sum(q * q for q in y))
    cos_min, cos_sum = min(cos_min, c), cos_sum + c
    same += max(range(len(x)), key=x.__getitem__) == max(range(len(y)), key=y.__getitem__)
print(f"gpu_bench: {sys.argv[5]}: logits cosine min {cos_min:.6f} mean {cos_sum / 96:.6f}; argmax equal {same}/96")
sys.exit(0 if cos_min >= float(sys.argv[3]) and same >= int(sys.argv[4]) else 1)
EOF
}

run() {
  out=${OUT:-$PWD/gpu-bench-out}
  mkdir -p "$out"
  exec > >(tee "$out/gpu_bench.log") 2>&1
  local gpu=$PWD/.gpu
  [[ -x $gpu/ringlm ]] || { echo "gpu_bench: no .gpu/ringlm (run 'tools/gpu_bench.sh pack' and carry .gpu)"; exit 1; }
  # The NVIDIA driver's Vulkan manifest where the device tool's notes say it is.
  for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
             /etc/vulkan/icd.d/nvidia_icd.json; do
    [[ -f $icd ]] && { export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd; break; }
  done
  R() { "$gpu/lib/ld-linux-x86-64.so.2" --library-path "$gpu/lib" "$gpu/ringlm" "$@"; }
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  R --version
  R devices
  # SMOKE=1 (tools/gpu_bench.sh smoke): the tiny preset and small sizes, on lavapipe.
  local preset=e2b tok=(--tokenizer assets/gemma4-tokenizer) vocab=260000 prefills=(512 4096) ctx=8192
  local batches=1,8,32,64 bprompt=128 bdecode=64
  if [[ ${SMOKE:-0} == 1 ]]; then
    preset=tiny tok=() vocab=500 prefills=(32) ctx=1024 batches=1,4 bprompt=16 bdecode=8
  fi
  local dir=/tmp/ringlm-$preset packed=/tmp/ringlm-$preset-packed
  local t0=$SECONDS
  [[ -f $packed/config.json ]] || {
    R make-test-model "$dir" --preset $preset --seed 1 "${tok[@]}" --no-vision --no-audio
    R convert --model "$dir" --out "$packed"
    rm -rf "$dir"
  }
  echo "gpu_bench: model ready after $((SECONDS - t0)) s"

  # Correctness: the same 96 ids, the first 64 as prefill and the rest as decode steps.
  local ids
  ids=$(python3 -c 'import sys; import random; random.seed(7); print(",".join(str(random.randrange(3, int(sys.argv[1]))) for _ in range(96)))' "$vocab")
  R logits --model "$packed" --activations f32 --ids "$ids" --decode-from 64 --out "$out/cpu.bin"
  R logits --model "$packed" --device vulkan --ids "$ids" --decode-from 64 --out "$out/vulkan.bin"
  compare "$out/cpu.bin" "$out/vulkan.bin" 0.9999 96 "float32"
  # The int8 dot-product path (--activations int8; the float32 shader where the device lacks
  # VK_KHR_shader_integer_dot_product): its own bound (docs/backends.md), reported here.
  R logits --model "$packed" --device vulkan --activations int8 --ids "$ids" --decode-from 64 --out "$out/vulkan-int8.bin"
  compare "$out/cpu.bin" "$out/vulkan-int8.bin" 0.995 0 "int8 activations" || echo "gpu_bench: int8 logits out of bound"
  # The tiled q4_0 matmul's binary16 tiles (RINGLM_VULKAN_FP16=1; the float32 tiles where the
  # device lacks shaderFloat16): the bound docs/backends.md documents for them.
  RINGLM_VULKAN_FP16=1 R logits --model "$packed" --device vulkan --ids "$ids" --decode-from 64 --out "$out/vulkan-fp16.bin"
  compare "$out/cpu.bin" "$out/vulkan-fp16.bin" 0.9999 0 "binary16 tiles" || echo "gpu_bench: binary16-tile logits out of bound"
  rm -f "$out/cpu.bin" "$out/vulkan.bin" "$out/vulkan-int8.bin" "$out/vulkan-fp16.bin"

  for dev in vulkan cpu; do
    for p in "${prefills[@]}"; do
      R bench --model "$packed" --device "$dev" --sections speed --prefill-tokens "$p" --decode-tokens 128 \
        --ctx $ctx --json "$out/bench-$dev-$p.json"
    done
    R bench --model "$packed" --device "$dev" --sections batch --batch-sizes $batches --batch-prompt-tokens $bprompt \
      --batch-decode-tokens $bdecode --batch-extract-parallel 1 --batch-extract-rows 1 --ctx $ctx \
      --json "$out/bench-$dev-batch.json"
  done
  # The int8 path (prefill and decode), then the same with it forced off: the A/B of one run.
  for int8 in 1 0; do
    RINGLM_VULKAN_INT8=$int8 R bench --model "$packed" --device vulkan --activations int8 --sections speed \
      --prefill-tokens "${prefills[0]}" --decode-tokens 128 --ctx $ctx --json "$out/bench-vulkan-int8-$int8.json"
  done
  # The tiled q4_0 matmul (prompt chunks of >= 8 rows; the default) against the row shader
  # alone (RINGLM_VULKAN_TILED_MIN_ROWS=0), and with binary16 tiles: the A/B of one run.
  for tiled in "0 0" "8 0" "8 1"; do
    read -r rows fp16 <<<"$tiled"
    RINGLM_VULKAN_TILED_MIN_ROWS=$rows RINGLM_VULKAN_FP16=$fp16 R bench --model "$packed" --device vulkan \
      --sections speed --prefill-tokens "${prefills[0]}" --decode-tokens 16 --growth-tokens 16 --ctx $ctx \
      --json "$out/bench-vulkan-tiled$rows-fp16$fp16.json"
  done
  echo "gpu_bench: done after $((SECONDS - t0)) s"
}

case $mode in
  pack) pack ;;
  run) run ;;
  smoke) pack && SMOKE=1 OUT=${OUT:-$PWD/gpu-bench-smoke} run ;;
  *) echo "usage: tools/gpu_bench.sh pack|run|smoke (see the comment at the top)" >&2; exit 2 ;;
esac
