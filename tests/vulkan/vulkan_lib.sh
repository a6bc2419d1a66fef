# Sourced by the Vulkan CLI tests: the default device settings (none of the RINGLM_VULKAN_*
# switches a developer may have exported), the test's scratch directory as the working one,
# and a pass without running anything where the machine has no Vulkan device (says so).
unset RINGLM_VULKAN_TILED_MIN_ROWS RINGLM_VULKAN_FP16 RINGLM_VULKAN_INT8 RINGLM_VULKAN_STEP_REUSE
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
if ! "$RINGLM" devices | grep -q '^vulkan:0 '; then
  echo "SKIP: no Vulkan device on this machine"
  exit 0
fi
