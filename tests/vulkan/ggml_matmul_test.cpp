// The device matmul over ggml block rows as GGUF files store them (Q8_0, Q4_1, Q5_0, Q5_1,
// Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS) on random blocks, against float64 over the rows the
// CPU's scalar decoder (kernels/dequant_ggml.h) gives, and against the CPU kernel
// (kernels::matmul with float32 activations); plus a split output (out_stride > rows) and
// the load-time refusal of a type with no device kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "device_fixture.h"
#include "kernels/dequant_ggml.h"
#include "kernels/ref_matmul.h"
#include "model/device_weights.h"
#include "util/float16.h"

using namespace ringlm;
using namespace ringlm::vulkan::testing;
using backend::Memory;
using backend::WeightLayout;

namespace {

struct Case {
  io::DType dtype;
  WeightLayout layout;
  std::vector<int> half_fields;  // byte offsets of the fp16 scales in a block
  int cols;                      // a block row that starts rows at odd word offsets where it can
};

const Case kCases[] = {
    {io::DType::Q8_0, WeightLayout::q8_0, {0}, 96},         // 102-byte rows
    {io::DType::Q4_1, WeightLayout::q4_1, {0, 2}, 96},
    {io::DType::Q5_0, WeightLayout::q5_0, {0}, 96},         // 66-byte rows
    {io::DType::Q5_1, WeightLayout::q5_1, {0, 2}, 96},
    {io::DType::Q4_K, WeightLayout::q4_k, {0, 2}, 512},
    {io::DType::Q5_K, WeightLayout::q5_k, {0, 2}, 512},
    {io::DType::Q6_K, WeightLayout::q6_k, {208}, 256},      // 210-byte rows
    {io::DType::IQ4_NL, WeightLayout::iq4_nl, {0}, 96},     // 54-byte rows
    {io::DType::IQ4_XS, WeightLayout::iq4_xs, {0}, 512},
};

// Random bytes with finite scales of either sign in [0.001, 0.05].
std::vector<std::uint8_t> random_blocks(const Case& c, int rows, unsigned seed) {
  const kernels::BlockFormat f = kernels::block_format(c.dtype);
  const std::size_t blocks = static_cast<std::size_t>(rows) * (c.cols / f.block_elems);
  std::vector<std::uint8_t> bytes(blocks * f.block_bytes);
  std::mt19937 rng(seed);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  for (std::size_t b = 0; b < blocks; ++b)
    for (int off : c.half_fields) {
      const std::uint16_t h = f32_to_fp16(scale(rng) * ((rng() & 1) ? 1.0f : -1.0f));
      std::memcpy(bytes.data() + b * f.block_bytes + off, &h, 2);
    }
  return bytes;
}

}  // namespace

TEST(VulkanGgmlMatmul, EveryBlockTypeMatchesFloat64AndTheCpuKernel) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const int rows = 13, n = 3;  // a partial last workgroup of 8 rows
  for (const Case& c : kCases) {
    SCOPED_TRACE(io::dtype_name(c.dtype));
    const std::vector<std::uint8_t> blocks = random_blocks(c, rows, 11 + static_cast<unsigned>(c.layout));
    const std::int64_t row_bytes = kernels::row_bytes(c.dtype, c.cols);
    std::vector<float> deq(static_cast<std::size_t>(rows) * c.cols);
    for (int r = 0; r < rows; ++r)
      kernels::dequantize_row(c.dtype, blocks.data() + r * row_bytes, deq.data() + static_cast<std::size_t>(r) * c.cols,
                              c.cols);
    const std::vector<float> x = randn(static_cast<std::size_t>(n) * c.cols, 5);
    // The CPU kernel on the same blocks, float32 activations (the scalar decoder per row).
    kernels::WeightMatrix wm{c.dtype, blocks.data(), rows, c.cols};
    wm.activations = kernels::Q4Activations::f32;
    std::vector<float> cpu(static_cast<std::size_t>(rows) * n);
    kernels::matmul(wm, x.data(), n, cpu.data(), nullptr);

    const auto wbuf = upload(*dev, blocks), in = upload(*dev, x);
    // Into a wider output (stride rows + 5, from word 2), as one part of a split matrix writes.
    const int stride = rows + 5;
    const auto out = dev->create_buffer(4ull * (2 + stride * n), Memory::device, "out");
    dev->fill_words(out, 0x7FC00000u);  // NaN: what the matmul must not touch stays NaN
    dev->begin_step();
    dev->matmul({wbuf, c.layout, rows, c.cols}, {in, 0}, n, {out, 2}, stride);
    dev->end_step();
    const std::vector<float> got = download<float>(*dev, out, 2 + static_cast<std::size_t>(stride) * n);
    for (int t = 0; t < n; ++t)
      for (int r = 0; r < stride; ++r) {
        const float g = got[2 + t * stride + r];
        if (r >= rows) {
          EXPECT_TRUE(std::isnan(g)) << "row " << r << " past the matrix was written";
          continue;
        }
        double want = 0, mag = 0;
        for (int k = 0; k < c.cols; ++k) {
          const double p = static_cast<double>(deq[static_cast<std::size_t>(r) * c.cols + k]) * x[t * c.cols + k];
          want += p;
          mag += std::abs(p);
        }
        ASSERT_NEAR(g, want, 1e-5 * mag + 1e-6) << "token " << t << " row " << r;
        ASSERT_NEAR(g, cpu[t * rows + r], 1e-5 * mag + 1e-6) << "token " << t << " row " << r << " (CPU kernel)";
      }
    EXPECT_TRUE(std::isnan(download<float>(*dev, out, 2)[0]));
    dev->destroy_buffer(wbuf);
    dev->destroy_buffer(in);
    dev->destroy_buffer(out);
  }
}

TEST(VulkanGgmlMatmul, ATypeWithoutADeviceKernelIsRefusedByName) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  // A Q2_K LM head: upload_weights names the tensor and the type instead of running it.
  std::vector<std::uint8_t> blocks(static_cast<std::size_t>(kernels::row_bytes(io::DType::Q2_K, 256)) * 4);
  model::ModelWeights w;
  w.lm_head = {io::DType::Q2_K, blocks.data(), 4, 256};
  model::ModelConfig cfg;
  try {
    model::detail::upload_weights(dev, w, cfg);
    FAIL() << "a Q2_K matrix was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lm_head is Q2_K"), std::string::npos) << e.what();
  }
  backend::WeightLayout l;
  EXPECT_FALSE(model::detail::device_layout(w.lm_head, l));
  w.lm_head.dtype = io::DType::Q6_K;
  EXPECT_TRUE(model::detail::device_layout(w.lm_head, l));
  EXPECT_EQ(l, WeightLayout::q6_k);
}
