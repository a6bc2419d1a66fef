#include "cli/compute_device.h"

#include <cstdlib>

#include "util/error.h"
#ifdef RINGLM_VULKAN
#include "vulkan/devices.h"
#endif

namespace ringlm::cli {

bool vulkan_compiled_in() {
#ifdef RINGLM_VULKAN
  return true;
#else
  return false;
#endif
}

std::shared_ptr<backend::Device> open_compute_device(const std::string& spec) {
  if (spec == "cpu") return nullptr;
  int index = 0;
  if (spec.rfind("vulkan:", 0) == 0) {
    const std::string n = spec.substr(7);
    char* end = nullptr;
    const long v = std::strtol(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || v < 0 || v > 1000)
      fail("--device ", spec, ": expected vulkan:N with N a device number (`ringlm devices` lists them)");
    index = static_cast<int>(v);
  } else if (spec != "vulkan") {
    fail("--device ", spec, ": expected cpu, vulkan or vulkan:N");
  }
#ifdef RINGLM_VULKAN
  return vulkan::open_device(index);
#else
  (void)index;
  fail_unsupported("--device ", spec, ": this ringlm was built without the Vulkan backend (configure with the "
                   "Vulkan headers and glslc installed: apt-get install libvulkan-dev glslc)");
#endif
}

}  // namespace ringlm::cli
