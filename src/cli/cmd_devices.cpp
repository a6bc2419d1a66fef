// `ringlm devices`: the compute devices --device can name (the CPU, and what Vulkan sees).
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "cli/compute_device.h"
#ifdef RINGLM_VULKAN
#include "vulkan/devices.h"
#endif

namespace ringlm::cli {
namespace {

void list_devices() {
  std::printf("cpu            the CPU kernels (default)\n");
  if (!vulkan_compiled_in()) {
    std::printf("vulkan         not compiled in (configure with libvulkan-dev and glslc installed)\n");
    return;
  }
#ifdef RINGLM_VULKAN
  std::string why;
  const auto devices = vulkan::list_devices(why);
  if (devices.empty()) std::printf("vulkan         no devices: %s\n", why.c_str());
  for (const backend::DeviceInfo& d : devices) {
    std::printf("vulkan:%-7d %s (%s), %.1f GiB, Vulkan %s, %s\n", d.index, d.name.c_str(), d.type.c_str(),
                static_cast<double>(d.memory_bytes) / (1u << 30), d.api_version.c_str(), d.driver.c_str());
    std::printf("               fp16 arithmetic: %s, int8 dot product: %s, 16-bit storage: %s, subgroup size %u\n",
                d.fp16_arithmetic ? "yes" : "no", d.int8_dot_product ? "yes" : "no", d.storage_16bit ? "yes" : "no",
                d.subgroup_size);
  }
#endif
}

}  // namespace
}  // namespace ringlm::cli

RINGLM_COMMAND(devices) {
  auto* cmd = app.add_subcommand("devices", "List the compute devices --device can name (cpu, vulkan:N)");
  cmd->callback([] { ringlm::cli::list_devices(); });
}
