// The int8 dot-product matmul (backend::Weight::int8_activations on q4p16 and Q8_0 weights,
// run where the device has VK_KHR_shader_integer_dot_product; lavapipe has it): against
// float64 over the dequantized weights and the float32 input within the documented bound
// (docs/backends.md: one activation code step per value, |dy| <= sum_b d_b * sum_{i in b}
// |w_i|, plus float32 rounding), different from the float32 shader (so the int8 path ran);
// with the path forced off (set_int8_dot(false), as RINGLM_VULKAN_INT8=0) the float32
// shader's bits come back. Then the tiny model with --activations int8 on the device
// against the CPU float32 path: as close as the CPU's own int8 activations are.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <unistd.h>

#include "device_fixture.h"
#include "kernels/dequant_ggml.h"
#include "kernels/q4_packed.h"
#include "model/device_weights.h"
#include "model/model.h"
#include "model/testing/test_checkpoint.h"
#include "util/float16.h"
#include "vulkan/vulkan_device.h"

namespace fs = std::filesystem;
using namespace ringlm;
using namespace ringlm::vulkan::testing;
using backend::Memory;
using backend::WeightLayout;

namespace {

std::vector<float> run(backend::Device& dev, const backend::Weight& w, backend::BufferId in, int n) {
  const auto out = dev.create_buffer(4ull * w.rows * n, Memory::device, "out");
  dev.begin_step();
  dev.matmul(w, {in, 0}, n, {out, 0});
  dev.end_step();
  auto v = download<float>(dev, out, static_cast<std::size_t>(w.rows) * n);
  dev.destroy_buffer(out);
  return v;
}

// A q4p16 or Q8_0 matrix and its dequantized rows.
struct Matrix {
  std::vector<std::uint8_t> bytes;
  std::vector<float> deq;
};
Matrix make(WeightLayout layout, int rows, int cols) {
  Matrix m;
  std::vector<float> wf = randn(static_cast<std::size_t>(rows) * cols, 1, 0.1f);
  wf[5] = 40.0f;  // one block with a large scale
  m.deq.resize(wf.size());
  if (layout == WeightLayout::q4p16) {
    m.bytes.resize(kernels::q4_packed_bytes(rows, cols));
    kernels::q4_quantize_pack(wf.data(), rows, cols, m.bytes.data());
    const kernels::Q4Packed view{m.bytes.data(), static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)};
    std::vector<kernels::BlockQ4_0> blocks(cols / 32);
    for (int r = 0; r < rows; ++r) {
      kernels::q4_unpack_row(view, r, blocks.data());
      kernels::dequantize_row_q4_0(blocks.data(), m.deq.data() + static_cast<std::size_t>(r) * cols, std::int64_t{cols});
    }
  } else {
    std::vector<kernels::BlockQ8_0> blocks(wf.size() / 32);
    kernels::quantize_row_q8_0(wf.data(), blocks.data(), static_cast<std::int64_t>(wf.size()));
    m.bytes.resize(blocks.size() * sizeof(kernels::BlockQ8_0));
    std::memcpy(m.bytes.data(), blocks.data(), m.bytes.size());
    kernels::dequantize_row_q8_0(blocks.data(), m.deq.data(), static_cast<std::int64_t>(wf.size()));
  }
  while (m.bytes.size() % 4) m.bytes.push_back(0);
  return m;
}

}  // namespace

TEST(VulkanInt8, Int8MatmulWithinTheActivationBoundAndTheFallbackIsTheFloatShader) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  auto* vk = dynamic_cast<vulkan::VulkanDevice*>(dev.get());
  ASSERT_NE(vk, nullptr);
  const bool has = dev->info().int8_dot_product;
  const int rows = 37, cols = 128, n = 3;  // a partial last group of 16 rows; 4 blocks per row
  std::vector<float> x = randn(static_cast<std::size_t>(n) * cols, 2);
  x[7] = 25.0f;  // one block with a large activation: coarse codes for its other values
  const auto in = upload(*dev, x);
  static_assert(sizeof(kernels::BlockQ8_0) == 34);
  for (WeightLayout layout : {WeightLayout::q4p16, WeightLayout::q8_0}) {
    SCOPED_TRACE(backend::weight_layout_name(layout));
    const Matrix m = make(layout, rows, cols);
    const auto wb = upload(*dev, m.bytes);
    backend::Weight wf{wb, layout, rows, cols}, wi = wf;
    wi.int8_activations = true;
    vk->set_int8_dot(true);
    EXPECT_EQ(vk->int8_dot(), has);
    const std::vector<float> f32 = run(*dev, wf, in, n), i8 = run(*dev, wi, in, n);
    vk->set_int8_dot(false);
    const std::vector<float> off = run(*dev, wi, in, n);
    vk->set_int8_dot(true);
    EXPECT_EQ(std::memcmp(off.data(), f32.data(), 4 * f32.size()), 0) << "the fallback is not the float32 shader";
    if (!has) {
      std::printf("device has no int8 dot product: only the fallback was tested\n");
      dev->destroy_buffer(wb);
      continue;
    }
    int differ = 0;
    for (int t = 0; t < n; ++t)
      for (int r = 0; r < rows; ++r) {
        double want = 0, mag = 0, bound = 0;
        for (int b = 0; b < cols / 32; ++b) {
          double amax = 0, wsum = 0;
          for (int k = b * 32; k < b * 32 + 32; ++k) {
            const double wv = m.deq[static_cast<std::size_t>(r) * cols + k], xv = x[t * cols + k];
            want += wv * xv;
            mag += std::abs(wv * xv);
            amax = std::max(amax, std::abs(xv));
            wsum += std::abs(wv);
          }
          bound += amax / 127.0 * wsum;  // one code step per activation
        }
        const float g = i8[t * rows + r];
        ASSERT_LE(std::abs(g - want), bound + 1e-5 * mag + 1e-6) << "token " << t << " row " << r;
        // Rounding to nearest keeps it within half a step on almost every row.
        EXPECT_LE(std::abs(g - want), 0.5 * bound + 1e-5 * mag + 1e-6) << "token " << t << " row " << r;
        differ += g != f32[t * rows + r];
      }
    EXPECT_GT(differ, rows) << "the int8 path gave the float32 shader's values: did it run?";
    dev->destroy_buffer(wb);
  }
  dev->destroy_buffer(in);
}

TEST(VulkanInt8, TinyModelWithInt8ActivationsTracksTheCpuFloatPath) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  if (!dev->info().int8_dot_product) GTEST_SKIP() << "the device has no int8 dot product";
  const fs::path dir = fs::temp_directory_path() / ("ringlm_vulkan_int8_test_" + std::to_string(::getpid()));
  model::testing::TestCheckpointOptions co;
  co.seed = 42;
  model::testing::write_test_checkpoint(dir, co);
  model::ModelOptions o;
  o.threads = 2;
  o.weights = model::WeightFormat::q4_0;
  o.activations = kernels::Q4Activations::f32;
  const auto cpu = model::Model::load(dir, o);
  o.activations = kernels::Q4Activations::int8;
  const auto cpu8 = model::Model::load(dir, o);  // the CPU's own int8 activations (w4a8 kernels)
  o.device = dev;
  const auto gpu = model::Model::load(dir, o);
  EXPECT_TRUE(gpu->device_weights()->layers[0].q_proj.parts[0].int8_activations);
  EXPECT_FALSE(gpu->device_weights()->lm_head.parts[0].int8_activations);
  const int V = cpu->config().vocab_size;
  std::vector<std::int32_t> ids(24);
  std::vector<std::int64_t> pos(24);
  for (int i = 0; i < 24; ++i) ids[i] = (i * 7919 + 3) % V, pos[i] = i;
  std::vector<std::vector<float>> rows;
  model::Session(cpu).prefill(ids, pos, model::LogitsMode::All,
                              [&](std::size_t, std::span<const float> r) { rows.emplace_back(r.begin(), r.end()); });
  // The worst cosine over the rows of a model's logits to the CPU float32 rows.
  auto worst = [&](const std::shared_ptr<const model::Model>& m) {
    double w = 1;
    model::Session(m).prefill(ids, pos, model::LogitsMode::All, [&](std::size_t i, std::span<const float> r) {
      double ab = 0, aa = 0, bb = 0;
      for (int v = 0; v < V; ++v)
        ab += double(r[v]) * rows[i][v], aa += double(rows[i][v]) * rows[i][v], bb += double(r[v]) * r[v];
      w = std::min(w, ab / std::sqrt(aa * bb));
    });
    return w;
  };
  const double dev8 = worst(gpu), cpu8w = worst(cpu8);
  std::printf("worst cosine to the CPU f32 logits: device int8 %.6f, CPU int8 %.6f\n", dev8, cpu8w);
  // The device's int8 activations lose about what the CPU's do (same block size, scale in
  // float32 on the device, fp16 on the CPU).
  EXPECT_GE(dev8, 0.995);
  EXPECT_GE(dev8, cpu8w - 0.002);
  fs::remove_all(dir);
}
