// Each Vulkan op against a float64 reference (and, where the CPU has the same kernel, the CPU
// kernel) on random inputs, on the first Vulkan device (lavapipe in CI); skipped without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "device_fixture.h"
#include "kernels/attention.h"
#include "kernels/q4_formats.h"
#include "kernels/q4_packed.h"
#include "kernels/ref_ops.h"
#include "util/float16.h"

using namespace ringlm;
using namespace ringlm::vulkan::testing;
using backend::Memory;
using backend::Ref;

namespace {

// |got - want| <= tol * (1 + |want|), element by element, with the first failure named.
void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(got[i] - want[i]), tol * (1.0 + std::abs(want[i]))) << what << " element " << i;
}

// out[t][r] in float64 over weight rows given as float (dequantized exactly).
std::vector<double> ref_matmul(const std::vector<float>& w, const std::vector<float>& x, int rows, int cols, int n) {
  std::vector<double> y(static_cast<std::size_t>(rows) * n);
  for (int t = 0; t < n; ++t)
    for (int r = 0; r < rows; ++r) {
      double s = 0;
      for (int c = 0; c < cols; ++c) s += static_cast<double>(w[r * cols + c]) * x[t * cols + c];
      y[t * rows + r] = s;
    }
  return y;
}

std::vector<float> run_matmul(backend::Device& dev, const backend::Weight& w, const std::vector<float>& x, int n) {
  const auto in = upload(dev, x);
  const auto out = dev.create_buffer(4ull * w.rows * n, Memory::device, "out");
  dev.begin_step();
  dev.matmul(w, {in, 0}, n, {out, 0});
  dev.end_step();
  return download<float>(dev, out, static_cast<std::size_t>(w.rows) * n);
}

}  // namespace

TEST(VulkanOps, DeviceDescribesItself) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  EXPECT_EQ(dev->info().api, "vulkan");
  EXPECT_FALSE(dev->info().name.empty());
  EXPECT_GT(dev->info().memory_bytes, 0u);
}

TEST(VulkanOps, MatmulQ4MatchesFloat64OfDequantizedRows) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const int rows = 37, cols = 96, n = 3;  // a partial last group of 16 rows
  std::vector<float> wf = randn(static_cast<std::size_t>(rows) * cols, 1, 0.1f);
  wf[5] = 40.0f;  // one large weight: a block whose scale is large
  std::vector<std::uint8_t> packed(kernels::q4_packed_bytes(rows, cols));
  kernels::q4_quantize_pack(wf.data(), rows, cols, packed.data());
  // The float64 reference reads the same q4_0 values back from the packed layout.
  const kernels::Q4Packed view{packed.data(), static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)};
  std::vector<float> deq(wf.size());
  std::vector<kernels::BlockQ4_0> blocks(cols / 32);
  for (int r = 0; r < rows; ++r) {
    kernels::q4_unpack_row(view, r, blocks.data());
    kernels::dequantize_row_q4_0(blocks.data(), deq.data() + static_cast<std::size_t>(r) * cols, cols);
  }
  const std::vector<float> x = randn(static_cast<std::size_t>(n) * cols, 2);
  backend::Weight w{upload(*dev, packed), backend::WeightLayout::q4p16, rows, cols};
  expect_close(run_matmul(*dev, w, x, n), ref_matmul(deq, x, rows, cols, n), 1e-5, "q4p16");
}

TEST(VulkanOps, MatmulFloatLayoutsMatchFloat64) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const int rows = 21, cols = 70, n = 2;
  const std::vector<float> wf = randn(static_cast<std::size_t>(rows) * cols, 3);
  const std::vector<float> x = randn(static_cast<std::size_t>(n) * cols, 4);
  {
    backend::Weight w{upload(*dev, wf), backend::WeightLayout::f32, rows, cols};
    expect_close(run_matmul(*dev, w, x, n), ref_matmul(wf, x, rows, cols, n), 1e-5, "f32");
  }
  std::vector<std::uint16_t> h(wf.size()), b(wf.size());
  std::vector<float> hf(wf.size()), bf(wf.size());
  for (std::size_t i = 0; i < wf.size(); ++i) {
    h[i] = f32_to_fp16(wf[i]);
    hf[i] = fp16_to_f32(h[i]);
    std::uint32_t bits;
    std::memcpy(&bits, &wf[i], 4);
    b[i] = static_cast<std::uint16_t>(bits >> 16);  // truncation: any bf16 value will do
    bits = static_cast<std::uint32_t>(b[i]) << 16;
    std::memcpy(&bf[i], &bits, 4);
  }
  backend::Weight w16{upload(*dev, h), backend::WeightLayout::f16, rows, cols};
  expect_close(run_matmul(*dev, w16, x, n), ref_matmul(hf, x, rows, cols, n), 1e-5, "f16");
  backend::Weight wb{upload(*dev, b), backend::WeightLayout::bf16, rows, cols};
  expect_close(run_matmul(*dev, wb, x, n), ref_matmul(bf, x, rows, cols, n), 1e-5, "bf16");
}

TEST(VulkanOps, RmsNormRopeAndElementwiseMatchFloat64) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const int n = 300, count = 5, d = 64;
  const std::vector<float> x = randn(static_cast<std::size_t>(n) * count, 5, 3.0f), wt = randn(n, 6);
  const auto bx = upload(*dev, x), bw = upload(*dev, wt);
  const auto by = dev->create_buffer(4ull * n * count, Memory::device, "y");
  // RoPE: 5 vectors of 64, two per angle row (angles from the CPU's rope_angles).
  std::vector<double> inv(d / 2);
  for (int i = 0; i < d / 2; ++i) inv[i] = std::pow(10000.0, -2.0 * i / d);
  std::vector<float> cs(3 * d);
  for (int r = 0; r < 3; ++r) kernels::rope_angles(inv.data(), d / 2, 1000 + 77 * r, cs.data() + r * d);
  const std::vector<float> rx = randn(static_cast<std::size_t>(count) * d, 7);
  const auto brx = upload(*dev, rx), bcs = upload(*dev, cs);
  // gelu_mul over 3 rows of 40 with an up stride of 50; soft cap; add and scale.
  const std::vector<float> gate = randn(120, 8, 3.0f), up = randn(150, 9), big = randn(1000, 10, 60.0f);
  const auto bg = upload(*dev, gate), bu = upload(*dev, up), bbig = upload(*dev, big);
  const auto bsum = upload(*dev, std::vector<float>(x.begin(), x.begin() + 1000));

  dev->begin_step();
  dev->rms_norm({bx, 0}, {bw, 0}, n, count, 1e-6f, {by, 0});
  dev->rope({brx, 0}, d, count, 2, {bcs, 0});
  dev->gelu_mul({bg, 0}, {bu, 0}, 40, 3, 50, {bg, 0});
  dev->soft_cap({bbig, 0}, 1000, 30.0f);
  dev->add({bsum, 0}, {bx, 0}, 1000);
  dev->scale({bsum, 0}, 1000, 0.5f);
  dev->end_step();

  std::vector<double> want(x.size());
  for (int v = 0; v < count; ++v) {
    double ss = 0;
    for (int i = 0; i < n; ++i) ss += static_cast<double>(x[v * n + i]) * x[v * n + i];
    const double inv_rms = 1.0 / std::sqrt(ss / n + 1e-6);
    for (int i = 0; i < n; ++i) want[v * n + i] = x[v * n + i] * inv_rms * wt[i];
  }
  expect_close(download<float>(*dev, by, x.size()), want, 1e-5, "rms_norm");

  std::vector<double> rwant(rx.size());
  for (int v = 0; v < count; ++v) {
    const double pos = 1000 + 77 * (v / 2);
    for (int i = 0; i < d / 2; ++i) {
      const double a = rx[v * d + i], b = rx[v * d + i + d / 2], ang = pos * inv[i];
      rwant[v * d + i] = a * std::cos(ang) - b * std::sin(ang);
      rwant[v * d + i + d / 2] = b * std::cos(ang) + a * std::sin(ang);
    }
  }
  expect_close(download<float>(*dev, brx, rx.size()), rwant, 1e-5, "rope");

  std::vector<double> gwant(120);
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 40; ++i) {
      const double g = gate[t * 40 + i];
      const double gelu = 0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)));
      gwant[t * 40 + i] = gelu * up[t * 50 + i];
    }
  expect_close(download<float>(*dev, bg, 120), gwant, 1e-5, "gelu_mul");

  std::vector<double> cwant(1000), swant(1000);
  for (int i = 0; i < 1000; ++i) {
    cwant[i] = 30.0 * std::tanh(big[i] / 30.0);
    swant[i] = (static_cast<double>(x[i]) + x[i]) * 0.5;
  }
  expect_close(download<float>(*dev, bbig, 1000), cwant, 1e-5, "soft_cap");
  expect_close(download<float>(*dev, bsum, 1000), swant, 1e-6, "add + scale");
}

TEST(VulkanOps, KvStoreRoundsLikeTheCpuCache) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const int heads = 2, d = 64, slots = 8, n = 3, row = heads * d;
  std::vector<float> k = randn(static_cast<std::size_t>(n) * row, 11, 10.0f), v = randn(k.size(), 12);
  // Saturation, subnormal halves, exact ties (1 + 2^-11 rounds to even), signed zero.
  const float specials[] = {70000.0f, -1e9f, 65519.0f, 1e-6f, -3e-8f, 6e-8f, 1.00048828125f, 1.00146484375f, -0.0f};
  for (std::size_t i = 0; i < std::size(specials); ++i) k[i] = specials[i];
  backend::KvLayer kv{dev->create_buffer(2ull * slots * row, Memory::device, "k"),
                      dev->create_buffer(2ull * slots * row, Memory::device, "v"),
                      dev->create_buffer(4ull * slots, Memory::device, "pos"), slots, heads, d};
  dev->fill_words(kv.pos, 0xFFFFFFFFu);
  const std::vector<std::int32_t> inputs = {5, 0, 7, /* positions: */ 13, 16, 23};
  const auto bi = upload(*dev, inputs), bk = upload(*dev, k), bv = upload(*dev, v);
  dev->begin_step();
  dev->kv_store(kv, {bk, 0}, {bv, 0}, {bi, 0}, {bi, 3}, n);
  dev->end_step();
  const auto kc = download<std::uint16_t>(*dev, kv.k, static_cast<std::size_t>(slots) * row);
  const auto vc = download<std::uint16_t>(*dev, kv.v, static_cast<std::size_t>(slots) * row);
  const auto pos = download<std::int32_t>(*dev, kv.pos, slots);
  std::vector<std::uint16_t> want(row);
  for (int i = 0; i < n; ++i) {
    const int slot = inputs[i];
    kernels::kv_store_f16(k.data() + i * row, want.data(), row);
    for (int j = 0; j < row; ++j) ASSERT_EQ(kc[slot * row + j], want[j]) << "K row " << i << " element " << j;
    kernels::kv_store_f16(v.data() + i * row, want.data(), row);
    for (int j = 0; j < row; ++j) ASSERT_EQ(vc[slot * row + j], want[j]) << "V row " << i << " element " << j;
    EXPECT_EQ(pos[slot], inputs[3 + i]);
  }
  EXPECT_EQ(pos[1], -1);
}

// Attention over an f16 ring against the CPU's reference attend_one on the same halves.
TEST(VulkanOps, AttendMatchesTheCpuReference) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  for (const auto& [heads, kv_heads, d, slots, window] :
       {std::tuple{4, 2, 64, 300, 0}, std::tuple{8, 1, 256, 40, 16}, std::tuple{2, 2, 512, 520, 0}}) {
    SCOPED_TRACE("heads " + std::to_string(heads) + "/" + std::to_string(kv_heads) + " d " + std::to_string(d) +
                 " slots " + std::to_string(slots) + " window " + std::to_string(window));
    const int row = kv_heads * d, n_tok = 3;
    std::vector<std::uint16_t> k16(static_cast<std::size_t>(slots) * row), v16(k16.size());
    const auto kf = randn(k16.size(), 13), vf = randn(k16.size(), 14);
    kernels::kv_store_f16(kf.data(), k16.data(), k16.size());
    kernels::kv_store_f16(vf.data(), v16.data(), v16.size());
    std::vector<std::int32_t> pos(slots);
    std::mt19937 rng(15);
    for (int s = 0; s < slots; ++s) pos[s] = (s % 9 == 4) ? -1 : static_cast<std::int32_t>((s * 7) % (slots + 20));
    const std::vector<std::int32_t> qpos = {slots / 2, slots + 30, 3};  // the last sees few slots
    const std::vector<float> q = randn(static_cast<std::size_t>(n_tok) * heads * d, 16, 0.2f);
    backend::KvLayer kv{upload(*dev, k16), upload(*dev, v16), upload(*dev, pos), slots, kv_heads, d};
    const auto bq = upload(*dev, q), bqp = upload(*dev, qpos);
    const auto out = dev->create_buffer(4ull * q.size(), Memory::device, "out");
    dev->begin_step();
    dev->attend({bq, 0}, n_tok, {bqp, 0}, heads, kv, slots, window, 0.125f, {out, 0});
    dev->end_step();
    const auto got = download<float>(*dev, out, q.size());

    kernels::KvSlots view;
    view.type = kernels::KvType::f16;
    view.k16 = k16.data();
    view.v16 = v16.data();
    view.pos = pos.data();
    view.n_slots = slots;
    view.n_kv_heads = kv_heads;
    view.head_dim = d;
    std::vector<float> scratch(kernels::attend_scratch_floats(heads, view)), cpu(static_cast<std::size_t>(heads) * d);
    for (int t = 0; t < n_tok; ++t) {
      kernels::attend_one(q.data() + t * heads * d, heads, qpos[t], view, window, 0.125f, scratch.data(), cpu.data());
      for (int j = 0; j < heads * d; ++j)
        ASSERT_NEAR(got[t * heads * d + j], cpu[j], 2e-5f * (1.0f + std::abs(cpu[j]))) << "token " << t << " value " << j;
    }
  }
}

TEST(VulkanOps, BadOperandsAreErrorsNotCrashes) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const auto small = dev->create_buffer(64, Memory::device, "small");
  dev->begin_step();
  EXPECT_THROW(dev->add({small, 10}, {small, 0}, 100), Error);  // past the end
  backend::Weight w{small, backend::WeightLayout::q4p16, 16, 33};  // cols not a multiple of 32
  EXPECT_THROW(dev->matmul(w, {small, 0}, 1, {small, 0}), Error);
  // No such buffer (ids are never reused, so a small id may exist when the whole binary runs).
  EXPECT_THROW(dev->copy({0x7FFFFFFFu, 0}, {small, 0}, 1), Error);
  dev->abandon_step();
  EXPECT_THROW(dev->create_buffer(1ull << 62, Memory::device, "a huge buffer"), Error);
  // The device still works after the refused ops.
  const auto a = upload(*dev, std::vector<float>{1, 2, 3}), b = upload(*dev, std::vector<float>{10, 20, 30});
  dev->begin_step();
  dev->add({a, 0}, {b, 0}, 3);
  dev->end_step();
  EXPECT_EQ(download<float>(*dev, a, 3), (std::vector<float>{11, 22, 33}));
}
