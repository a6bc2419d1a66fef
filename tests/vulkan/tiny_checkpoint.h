// Shared by the Vulkan model tests: the tiny random checkpoint (model/testing/test_checkpoint.h)
// of a seed, written once per process under the temp dir, and loaded on a device or the CPU.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>

#include "backend/device.h"
#include "model/model.h"
#include "model/testing/test_checkpoint.h"

namespace ringlm::vulkan::testing {

inline std::filesystem::path tiny_checkpoint_dir(std::uint64_t seed) {
  static std::map<std::uint64_t, std::filesystem::path> dirs;
  auto [it, fresh] = dirs.try_emplace(seed);
  if (fresh) {
    it->second = std::filesystem::temp_directory_path() /
                 ("ringlm_vulkan_tiny_" + std::to_string(::getpid()) + "_" + std::to_string(seed));
    model::testing::TestCheckpointOptions o;
    o.seed = seed;
    model::testing::write_test_checkpoint(it->second, o);
  }
  return it->second;
}

// On `dev` (null: the CPU), 2 threads, with the given activations.
inline std::shared_ptr<const model::Model> load_tiny(std::uint64_t seed, std::shared_ptr<backend::Device> dev,
                                                     kernels::Q4Activations activations = model::ModelOptions{}.activations) {
  model::ModelOptions o;
  o.threads = 2;
  o.activations = activations;
  o.device = std::move(dev);
  return model::Model::load(tiny_checkpoint_dir(seed), o);
}

}  // namespace ringlm::vulkan::testing
