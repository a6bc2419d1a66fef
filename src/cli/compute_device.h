// `--device cpu|vulkan[:N]`: the one place that decides which backend a command's model runs
// on (docs/backends.md), and whether this build has Vulkan at all.
#pragma once

#include <memory>
#include <string>

#include "backend/device.h"

namespace ringlm::cli {

// "cpu" gives null (the CPU kernels); "vulkan" or "vulkan:N" opens Vulkan device N (0 by
// default). Throws ringlm::Error naming the flag's value and what is missing: an unknown
// value, a build without Vulkan, no loader, no driver, no such device.
std::shared_ptr<backend::Device> open_compute_device(const std::string& spec);

// Whether the Vulkan backend is compiled in (RINGLM_VULKAN at configure time).
bool vulkan_compiled_in();

}  // namespace ringlm::cli
