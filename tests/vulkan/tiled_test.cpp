// The tiled q4p16 matmul (shaders/matmul_tiled.glsl: the rows of a matmul's row groups of at
// least VulkanDevice::tiled_min_rows() rows) on random blocks: against float64 over the
// dequantized weights and against the row shader (matmul.comp) at shapes with partial
// groups, partial 64-row tiles and partial 32-row input tiles; the threshold picks the
// shader per row group, each group's rows as if run alone; a row's bits do not depend on the other rows of the step (tile position, output
// stride, offsets); the binary16 tiles (RINGLM_VULKAN_FP16=1, where the device has
// shaderFloat16) within their documented bound (docs/backends.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <span>

#include "device_fixture.h"
#include "kernels/q4_formats.h"
#include "kernels/q4_packed.h"
#include "vulkan/vulkan_device.h"

using namespace ringlm;
using namespace ringlm::vulkan::testing;
using backend::Memory;
using backend::WeightLayout;

namespace {

// A q4p16 matrix on the device and its rows dequantized on the host (the q4_0 values).
struct Matrix {
  backend::Weight w;
  std::vector<float> deq;
};
Matrix make(backend::Device& dev, int rows, int cols, unsigned seed) {
  std::vector<float> wf = randn(static_cast<std::size_t>(rows) * cols, seed, 0.1f);
  wf[3] = 30.0f;  // one block with a large scale
  std::vector<std::uint8_t> packed(kernels::q4_packed_bytes(rows, cols));
  kernels::q4_quantize_pack(wf.data(), rows, cols, packed.data());
  const kernels::Q4Packed view{packed.data(), static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)};
  Matrix m;
  m.deq.resize(wf.size());
  std::vector<kernels::BlockQ4_0> blocks(cols / 32);
  for (int r = 0; r < rows; ++r) {
    kernels::q4_unpack_row(view, r, blocks.data());
    kernels::dequantize_row_q4_0(blocks.data(), m.deq.data() + static_cast<std::size_t>(r) * cols, std::int64_t{cols});
  }
  m.w = {upload(dev, packed), WeightLayout::q4p16, rows, cols};
  return m;
}

// out[t * stride + r] for n input rows starting at input word in_word, written from word out_word.
std::vector<float> run(backend::Device& dev, const backend::Weight& w, backend::BufferId in, std::uint64_t in_word,
                       int n, std::int64_t stride = 0, std::uint64_t out_word = 0) {
  if (stride == 0) stride = w.rows;
  const std::uint64_t words = out_word + static_cast<std::uint64_t>(stride) * n;
  const auto out = dev.create_buffer(4 * words, Memory::device, "out");
  dev.fill_words(out, 0x7FC00000u);  // NaN: a value never written shows
  dev.begin_step();
  dev.matmul(w, {in, in_word}, n, {out, out_word}, stride);
  dev.end_step();
  std::vector<float> all = download<float>(dev, out, words);
  dev.destroy_buffer(out);
  std::vector<float> v(static_cast<std::size_t>(w.rows) * n);
  for (int t = 0; t < n; ++t)
    for (int r = 0; r < w.rows; ++r) v[t * w.rows + r] = all[out_word + t * stride + r];
  return v;
}

struct Ref {
  double y = 0, mag = 0, wsum = 0;  // sum w x, sum |w x|, sum |w|
};
Ref reference(const Matrix& m, const std::vector<float>& x, int t, int r) {
  Ref o;
  const int cols = static_cast<int>(m.w.cols);
  for (int c = 0; c < cols; ++c) {
    const double wv = m.deq[static_cast<std::size_t>(r) * cols + c], xv = x[static_cast<std::size_t>(t) * cols + c];
    o.y += wv * xv;
    o.mag += std::abs(wv * xv);
    o.wsum += std::abs(wv);
  }
  return o;
}

int count_differ(const std::vector<float>& a, const std::vector<float>& b) {
  int n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], 4) != 0;
  return n;
}

// The device as a VulkanDevice with the switches restored at the end of a test.

constexpr const char* kNoTiledMatmul = "the device has too little shared memory for the tiled matmul";

}  // namespace

TEST(VulkanTiled, MatchesFloat64AndTheRowShaderAtRaggedShapes) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  Switches sw(dev.get());
  ASSERT_NE(sw.vk, nullptr);
  if (!sw.tiled_from(8)) GTEST_SKIP() << kNoTiledMatmul;
  sw.vk->set_fp16(false);
  // Weight rows: a partial group (37), a partial second 64-row tile (80 = 64 + one group),
  // exactly two tiles (128); input rows: 8, 9, 33 (a second input tile of 1), 64.
  const int shapes[][2] = {{37, 96}, {80, 256}, {128, 64}};
  unsigned seed = 10;
  for (const auto& s : shapes) {
    const Matrix m = make(*dev, s[0], s[1], seed++);
    for (int n : {8, 9, 33, 64}) {
      SCOPED_TRACE(testing::Message() << s[0] << " x " << s[1] << " weight, " << n << " input rows");
      std::vector<float> x = randn(static_cast<std::size_t>(n) * s[1], seed++);
      x[1] = 20.0f;
      const auto in = upload(*dev, x);
      sw.vk->set_tiled_min_rows(8);
      const std::vector<float> tiled = run(*dev, m.w, in, 0, n);
      sw.vk->set_tiled_min_rows(0);
      const std::vector<float> rows = run(*dev, m.w, in, 0, n);
      for (int t = 0; t < n; ++t)
        for (int r = 0; r < s[0]; ++r) {
          const Ref want = reference(m, x, t, r);
          const float g = tiled[t * s[0] + r];
          // float32 sums of at most 256 products: well within 1e-5 of sum |w x|.
          ASSERT_LE(std::abs(g - want.y), 1e-5 * want.mag + 1e-7) << "input " << t << " row " << r;
          ASSERT_LE(std::abs(g - rows[t * s[0] + r]), 2e-5 * want.mag + 1e-7) << "input " << t << " row " << r;
        }
      dev->destroy_buffer(in);
    }
    dev->destroy_buffer(m.w.buf);
  }
}

// Row groups (one per sequence of a batched step): each group's rows have the bits of that
// group run alone, on both sides of the threshold, with an output stride (a split weight's
// part); a step of one-row groups gives the row shader's bits however many it holds.
TEST(VulkanTiled, EachRowGroupPicksItsShaderAsIfAlone) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  Switches sw(dev.get());
  ASSERT_NE(sw.vk, nullptr);
  if (!sw.tiled_from(8)) GTEST_SKIP() << kNoTiledMatmul;
  sw.vk->set_fp16(false);
  const int rows = 80, cols = 256;
  const Matrix m = make(*dev, rows, cols, 21);
  // Groups under, at and over the threshold, in mixed order; runs of both kinds.
  const std::vector<int> groups = {1, 1, 20, 3, 8, 9, 1, 7, 33, 1};
  int n = 0;
  for (int g : groups) n += g;
  const std::vector<float> x = randn(static_cast<std::size_t>(n) * cols, 22);
  const auto in = upload(*dev, x);
  const std::int64_t stride = rows + 5;
  const auto out = dev->create_buffer(4ull * stride * n, Memory::device, "out");
  dev->fill_words(out, 0x7FC00000u);
  dev->begin_step();
  dev->matmul(m.w, {in, 0}, std::span<const int>(groups), {out, 0}, stride);
  dev->end_step();
  const std::vector<float> all = download<float>(*dev, out, static_cast<std::size_t>(stride) * n);
  int first = 0;
  for (int g : groups) {
    const std::vector<float> alone = run(*dev, m.w, in, static_cast<std::uint64_t>(first) * cols, g);
    for (int t = 0; t < g; ++t)
      ASSERT_EQ(std::memcmp(&all[static_cast<std::size_t>(first + t) * stride], &alone[static_cast<std::size_t>(t) * rows],
                            4 * rows), 0)
          << "row " << t << " of a group of " << g << " at input row " << first;
    first += g;
  }
  // Forty one-row groups in one step: the row shader's bits (the tiled shader's differ).
  const std::vector<int> ones(40, 1);
  sw.vk->set_tiled_min_rows(0);
  const std::vector<float> row_shader = run(*dev, m.w, in, 0, 40);
  sw.vk->set_tiled_min_rows(8);
  EXPECT_GT(count_differ(run(*dev, m.w, in, 0, 40), row_shader), 0) << "40 rows as one group did not run tiled";
  dev->begin_step();
  dev->matmul(m.w, {in, 0}, std::span<const int>(ones), {out, 0}, rows);
  dev->end_step();
  EXPECT_EQ(count_differ(download<float>(*dev, out, 40ull * rows), row_shader), 0)
      << "40 one-row groups did not all run the row shader";
  // A group of no rows is a caller's error, not an empty dispatch.
  const int bad[] = {3, 0};
  dev->begin_step();
  EXPECT_THROW(dev->matmul(m.w, {in, 0}, std::span<const int>(bad), {out, 0}, rows), Error);
  dev->abandon_step();
  dev->destroy_buffer(out);
  dev->destroy_buffer(in);
  dev->destroy_buffer(m.w.buf);
}

TEST(VulkanTiled, ThresholdPicksTheShaderAndRowsDoNotDependOnTheStep) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  Switches sw(dev.get());
  ASSERT_NE(sw.vk, nullptr);
  if (!sw.tiled_from(9)) GTEST_SKIP() << kNoTiledMatmul;
  sw.vk->set_fp16(false);
  const int rows = 80, cols = 256, n = 64;
  const Matrix m = make(*dev, rows, cols, 3);
  const std::vector<float> x = randn(static_cast<std::size_t>(n) * cols, 4);
  const auto in = upload(*dev, x);
  sw.vk->set_tiled_min_rows(0);
  const std::vector<float> row8 = run(*dev, m.w, in, 0, 8), row64 = run(*dev, m.w, in, 0, n);
  sw.vk->set_tiled_min_rows(9);
  // 8 rows under a threshold of 9: the row shader's bits.
  EXPECT_EQ(count_differ(run(*dev, m.w, in, 0, 8), row8), 0) << "8 rows under a threshold of 9 did not run matmul.comp";
  const std::vector<float> all = run(*dev, m.w, in, 0, n);
  // The tiled shader ran: its summation order differs from the row shader's.
  EXPECT_GT(count_differ(all, row64), rows) << "the tiled matmul gave the row shader's bits: did it run?";
  // Input rows 21..41 alone (other tile positions, a ragged input tile) and written with an
  // output stride and offset, as a row-split weight part is: the same bits as in the 64-row step.
  const int first = 21, k = 21;
  const std::vector<float> part = run(*dev, m.w, in, static_cast<std::uint64_t>(first) * cols, k, rows + 7, 5);
  for (int t = 0; t < k; ++t)
    ASSERT_EQ(std::memcmp(&part[t * rows], &all[(first + t) * rows], 4 * rows), 0) << "input row " << first + t;
  // Rows 40..48 alone: a tile of 9 rows (the shader's one-row-per-thread branch) against the
  // same rows in a full tile of 32 (its two-row branch).
  const std::vector<float> nine = run(*dev, m.w, in, 40ull * cols, 9);
  for (int t = 0; t < 9; ++t)
    ASSERT_EQ(std::memcmp(&nine[t * rows], &all[(40 + t) * rows], 4 * rows), 0) << "input row " << 40 + t;
  dev->destroy_buffer(in);
  dev->destroy_buffer(m.w.buf);
}

TEST(VulkanTiled, Fp16TilesWithinTheirBound) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  Switches sw(dev.get());
  ASSERT_NE(sw.vk, nullptr);
  if (!sw.tiled_from(8)) GTEST_SKIP() << kNoTiledMatmul;
  const int rows = 80, cols = 256, n = 33;
  const Matrix m = make(*dev, rows, cols, 5);
  std::vector<float> x = randn(static_cast<std::size_t>(n) * cols, 6);
  x[2] = 1e5f;         // past binary16's range: clamped to 65504
  x[40] = 3e-6f;       // a binary16 subnormal
  x[cols + 9] = 700.123f;
  const auto in = upload(*dev, x);
  sw.vk->set_fp16(false);
  const std::vector<float> f32 = run(*dev, m.w, in, 0, n);
  sw.vk->set_fp16(true);
  if (!sw.vk->fp16()) {
    EXPECT_EQ(count_differ(run(*dev, m.w, in, 0, n), f32), 0) << "without shaderFloat16 the float32 tiles run";
    std::printf("device has no shaderFloat16 (or VK_KHR_shader_float16_int8): only the fallback was tested\n");
  } else {
    const std::vector<float> f16 = run(*dev, m.w, in, 0, n);
    std::vector<float> xc = x;  // the clamp is part of the documented behaviour
    for (auto& v : xc) v = std::clamp(v, -65504.0f, 65504.0f);
    double worst = 0;
    for (int t = 0; t < n; ++t)
      for (int r = 0; r < rows; ++r) {
        const Ref want = reference(m, xc, t, r);
        // Each input rounded to binary16: 2^-11 relative, or 2^-14 absolute where a subnormal
        // may flush; products and sums in float32.
        const double bound = std::ldexp(want.mag, -11) + std::ldexp(want.wsum, -14) + 1e-5 * want.mag + 1e-7;
        const double err = std::abs(f16[t * rows + r] - want.y);
        ASSERT_LE(err, bound) << "input " << t << " row " << r;
        worst = std::max(worst, err / bound);
      }
    std::printf("binary16 tiles: worst error %.3f of the bound\n", worst);
    EXPECT_GT(count_differ(f16, f32), rows) << "the binary16 tiles gave the float32 tiles' bits: did they run?";
  }
  dev->destroy_buffer(in);
  dev->destroy_buffer(m.w.buf);
}

// Not run by ctest (DISABLED_): the tiled and row shaders on one E2B-sized q4_0 matrix
// (1536 x 6144, the MLP down projection's shape), 64 input rows, best of 3 steps each:
//   build/tests/test_vulkan --gtest_also_run_disabled_tests --gtest_filter='VulkanTiled.DISABLED_*'
// Input rows 8, 16, 32, 64: a batch of one-row decode items runs the row shader (each item
// is its own row group), a prompt chunk of as many rows the tiled one; the ratio is what
// choosing per sequence costs batched decode (BENCHMARKS.md).
TEST(VulkanTiled, DISABLED_SpeedAtAnE2bShape) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  Switches sw(dev.get());
  ASSERT_NE(sw.vk, nullptr);
  const int rows = 1536, cols = 6144, max_n = 64;
  const Matrix m = make(*dev, rows, cols, 7);
  const auto in = upload(*dev, randn(static_cast<std::size_t>(max_n) * cols, 8));
  const auto out = dev->create_buffer(4ull * rows * max_n, Memory::device, "out");
  auto best_ms = [&](int n, int min_rows, bool fp16) {
    sw.vk->set_tiled_min_rows(min_rows);
    sw.vk->set_fp16(fp16);
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      dev->begin_step();
      dev->matmul(m.w, {in, 0}, n, {out, 0});
      dev->end_step();
      best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  for (int n : {8, 16, 32, 64}) {
    const double row = best_ms(n, 0, false), tiled = best_ms(n, 8, false), f16 = n == 64 ? best_ms(n, 8, true) : 0.0;
    std::printf("%s, %d x %d q4_0, %d input rows: row shader %.1f ms, tiled %.1f ms (%.2fx)", dev->info().name.c_str(),
                rows, cols, n, row, tiled, row / tiled);
    if (n == 64) std::printf(", tiled fp16%s %.1f ms", sw.vk->fp16() ? "" : " (unavailable)", f16);
    std::printf("\n");
  }
  for (auto b : {in, out, m.w.buf}) dev->destroy_buffer(b);
}
