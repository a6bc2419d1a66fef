// The Vulkan devices this machine has, and opening one as a backend::Device. The only
// entry point the rest of ringlm uses (src/cli), compiled when the build found Vulkan
// (RINGLM_VULKAN, docs/backends.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"

namespace ringlm::vulkan {

// Every physical device the Vulkan loader reports (index = the N of --device vulkan:N).
// Empty, with the reason in `why`, when there is no loader or no driver.
std::vector<backend::DeviceInfo> list_devices(std::string& why);

// Opens device `index` for compute. Throws ringlm::Error naming the device (or the index and
// how many there are) and the missing piece: no loader, no driver, no compute queue, a
// feature or limit ringlm needs.
std::unique_ptr<backend::Device> open_device(int index);

}  // namespace ringlm::vulkan
