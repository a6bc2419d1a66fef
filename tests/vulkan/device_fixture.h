// Shared by the Vulkan tests: the first Vulkan device (opened once per process; a test
// skips with the reason when there is none, e.g. no loader or no driver installed) and
// helpers to move float and int vectors in and out of device buffers.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/device.h"
#include "util/error.h"
#include "vulkan/devices.h"
#include "vulkan/vulkan_device.h"

namespace ringlm::vulkan::testing {

// The device, or null with the reason in `why`.
inline std::shared_ptr<backend::Device> shared_device(std::string& why) {
  static std::shared_ptr<backend::Device> dev;
  static std::string reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    std::vector<backend::DeviceInfo> list = list_devices(reason);
    if (!list.empty()) {
      try {
        dev = open_device(0);
      } catch (const Error& e) {
        reason = e.what();
      }
    }
  }
  why = reason;
  return dev;
}

#define RINGLM_VULKAN_DEVICE_OR_SKIP(var)                                        \
  std::string var##_why;                                                       \
  std::shared_ptr<backend::Device> var = shared_device(var##_why);             \
  if (!var) GTEST_SKIP() << "no Vulkan device: " << var##_why

// Normally distributed test data; the seed makes each test's inputs fixed but independent.
inline std::vector<float> randn(std::size_t n, unsigned seed, float sd = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

template <class T>
backend::BufferId upload(backend::Device& dev, const std::vector<T>& v, backend::Memory m = backend::Memory::device) {
  const backend::BufferId id = dev.create_buffer(v.size() * sizeof(T), m, "test data");
  dev.write(id, 0, v.data(), v.size() * sizeof(T));
  return id;
}

template <class T>
std::vector<T> download(backend::Device& dev, backend::BufferId id, std::size_t n, std::size_t first = 0) {
  std::vector<T> v(n);
  dev.read(id, first * sizeof(T), v.data(), n * sizeof(T));
  return v;
}

// The device's tiled-matmul threshold and binary16 switch, restored when the test ends (a
// test sets them whatever the environment says).
struct Switches {
  vulkan::VulkanDevice* vk;
  int rows;
  bool fp16;
  explicit Switches(backend::Device* d) : vk(dynamic_cast<vulkan::VulkanDevice*>(d)) {
    rows = vk ? vk->tiled_min_rows() : 0;
    fp16 = vk ? vk->fp16() : false;
  }
  // Tiled from `min_rows` input rows on; false when the device has too little shared memory
  // for the tiled matmul (the device then keeps the threshold at 0).
  bool tiled_from(int min_rows) {
    vk->set_tiled_min_rows(min_rows);
    return vk->tiled_min_rows() != 0;
  }
  ~Switches() {
    if (!vk) return;
    vk->set_tiled_min_rows(rows);
    vk->set_fp16(fp16);
  }
};

}  // namespace ringlm::vulkan::testing
