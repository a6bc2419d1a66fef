// Lattice-exact q4_0 (kernels/q4_lattice.h): blocks already on an int4 grid come back with
// their codes and scale, in either sign convention; the row factor carries scales fp16 cannot
// hold; blocks off any lattice keep ggml's rule bit for bit; the matmul applies the factors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/q4_lattice.h"
#include "kernels/q4_packed.h"
#include "kernels/q4_weight_matmul.h"
#include "kernels/ref_matmul.h"
#include "util/float16.h"

namespace ringlm::kernels {
namespace {

float bf16_round(float v) { return bf16_to_f32(f32_to_bf16(v)); }

// A block c_i * s with codes drawn from [lo, hi] and `extreme` forced at a random spot.
std::vector<float> lattice_block(std::mt19937& rng, float s, int lo, int hi, int extreme, std::vector<int>* codes) {
  std::uniform_int_distribution<int> code(lo, hi), at(0, 31);
  codes->assign(32, 0);
  for (int& c : *codes) c = code(rng);
  (*codes)[at(rng)] = extreme;
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>((*codes)[i]) * s;
  return x;
}

std::vector<float> dequant(const std::vector<BlockQ4_0>& y, float factor) {
  std::vector<float> out(y.size() * kQBlock);
  dequantize_row_q4_0(y.data(), out.data(), out.size());
  for (float& v : out) v *= factor;
  return out;
}

TEST(Q4Lattice, RecoversBlocksInBothSignConventions) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const float s = bf16_round(std::uniform_real_distribution<float>(1e-3f, 1e-1f)(rng));
    std::vector<int> codes;
    // [-8, 7] with -8 (ggml's convention) and [-7, 7] with +7 at the extreme (symmetric clipping).
    const bool plus7 = trial % 2 == 1;
    const auto x = plus7 ? lattice_block(rng, s, -6, 7, 7, &codes) : lattice_block(rng, s, -8, 7, -8, &codes);
    float got_s = 0.0f;
    std::int8_t got_c[32];
    ASSERT_TRUE(q4_lattice_block(x.data(), io::DType::F32, &got_s, got_c)) << "trial " << trial;
    for (int i = 0; i < 32; ++i) ASSERT_EQ(static_cast<float>(got_c[i]) * got_s, x[i]);
    std::vector<BlockQ4_0> y(1);
    Q4LatticeStats st;
    const float f = quantize_row_q4_0_lattice(x.data(), io::DType::F32, y.data(), 32, true, &st);
    EXPECT_EQ(f, 1.0f);
    EXPECT_EQ(st.exact, 1u);
    EXPECT_EQ(dequant(y, f), x) << "trial " << trial;
  }
}

TEST(Q4Lattice, GgmlRuleMovesPlusSevenBlocksOffTheLattice) {
  // The reason for the importer: ggml's d = max / -8 puts a +7 extreme at code 0, so the
  // other codes land between lattice points.
  std::mt19937 rng(3);
  std::vector<int> codes;
  const auto x = lattice_block(rng, 0.015625f, -6, 7, 7, &codes);
  std::vector<BlockQ4_0> ggml(1), ours(1);
  quantize_row_q4_0_ref(x.data(), ggml.data(), 32);
  quantize_row_q4_0_lattice(x.data(), io::DType::F32, ours.data(), 32, true, nullptr);
  EXPECT_NE(dequant(ggml, 1.0f), x);
  EXPECT_EQ(dequant(ours, 1.0f), x);
}

TEST(Q4Lattice, TinyScalesGetARowFactorAndStayExact) {
  std::mt19937 rng(11);
  std::vector<float> row;
  std::vector<int> codes;
  // Normal-range blocks and blocks with scales far below fp16's smallest normal (2^-14).
  for (int b = 0; b < 8; ++b) {
    const float s = b % 2 ? std::ldexp(1.3828125f, -20 - b) : 0.01171875f;
    const auto x = lattice_block(rng, s, -8, 7, -8, &codes);
    row.insert(row.end(), x.begin(), x.end());
  }
  std::vector<BlockQ4_0> y(8);
  Q4LatticeStats st;
  const float f = quantize_row_q4_0_lattice(row.data(), io::DType::F32, y.data(), row.size(), true, &st);
  EXPECT_NE(f, 1.0f);
  EXPECT_EQ(std::exp2(std::round(std::log2(f))), f);  // a power of two
  EXPECT_EQ(st.lattice, 8u);
  EXPECT_EQ(st.exact, 8u);
  EXPECT_EQ(st.rows_scaled, 1u);
  EXPECT_EQ(dequant(y, f), row);
  // Without a factor (a GGUF file) the tiny scales are rounded to fp16 and counted.
  Q4LatticeStats gguf;
  EXPECT_EQ(quantize_row_q4_0_lattice(row.data(), io::DType::F32, y.data(), row.size(), false, &gguf), 1.0f);
  EXPECT_EQ(gguf.lattice, 8u);
  EXPECT_EQ(gguf.exact, 4u);
  EXPECT_NE(dequant(y, 1.0f), row);
}

TEST(Q4Lattice, Bf16FileHoldingRoundedProductsIsRecovered) {
  // A bf16 checkpoint stores bf16(c * s): the importer accepts codes and a bf16 scale whose
  // products round to the stored values.
  std::mt19937 rng(5);
  int recovered = 0;
  for (int trial = 0; trial < 100; ++trial) {
    const float s = bf16_round(std::uniform_real_distribution<float>(1e-3f, 1e-1f)(rng));
    std::vector<int> codes;
    auto x = lattice_block(rng, s, -8, 7, -8, &codes);
    for (float& v : x) v = bf16_round(v);
    float got_s;
    std::int8_t got_c[32];
    if (!q4_lattice_block(x.data(), io::DType::BF16, &got_s, got_c)) continue;
    ++recovered;
    for (int i = 0; i < 32; ++i) EXPECT_EQ(bf16_round(static_cast<float>(got_c[i]) * got_s), x[i]);
  }
  EXPECT_EQ(recovered, 100);
}

TEST(Q4Lattice, BlocksOffTheLatticeKeepGgmlsRule) {
  std::mt19937 rng(1);
  std::normal_distribution<float> n(0.0f, 0.05f);
  std::vector<float> row(4096);
  for (float& v : row) v = n(rng);
  std::vector<BlockQ4_0> ours(row.size() / 32), ggml(row.size() / 32);
  Q4LatticeStats st;
  EXPECT_EQ(quantize_row_q4_0_lattice(row.data(), io::DType::F32, ours.data(), row.size(), true, &st), 1.0f);
  quantize_row_q4_0_ref(row.data(), ggml.data(), row.size());
  EXPECT_EQ(st.lattice, 0u);
  EXPECT_EQ(std::memcmp(ours.data(), ggml.data(), ours.size() * sizeof(BlockQ4_0)), 0);
  // Non-finite values are never a lattice.
  row[3] = std::nanf("");
  float s;
  std::int8_t c[32];
  EXPECT_FALSE(q4_lattice_block(row.data(), io::DType::F32, &s, c));
}

TEST(Q4Lattice, MatmulAppliesRowFactors) {
  // 20 rows (two 16-row groups, the second partial), row factors 2^-20 on odd rows: the
  // w4a8 kernels, the shared-input form, the group subset and the float path must all give
  // the factor-scaled results.
  const std::size_t rows = 20, cols = 64;
  std::mt19937 rng(9);
  std::vector<BlockQ4_0> blocks(rows * cols / 32);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : blocks) {
    b.d = f32_to_fp16(0.01f);
    for (auto& q : b.qs) q = static_cast<std::uint8_t>(byte(rng));
  }
  Q4PackedBuffer buf(rows, cols);
  q4_pack(blocks.data(), rows, cols, buf.data());
  std::vector<float> factors(rows, 1.0f);
  for (std::size_t r = 1; r < rows; r += 2) factors[r] = std::ldexp(1.0f, -20);
  WeightMatrix plain{io::DType::Q4_0, buf.view().data, static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)};
  plain.packed = true;
  WeightMatrix scaled = plain;
  scaled.row_scales = factors.data();
  std::vector<float> in(2 * cols);
  for (float& v : in) v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  std::vector<float> a(2 * rows), b(2 * rows);
  q4_weight_matmul(plain, in.data(), 2, a.data());
  q4_weight_matmul(scaled, in.data(), 2, b.data());
  for (std::size_t t = 0; t < 2; ++t)
    for (std::size_t r = 0; r < rows; ++r) EXPECT_EQ(b[t * rows + r], a[t * rows + r] * factors[r]);
  const WeightMatrix* ws[2] = {&scaled, &plain};
  std::vector<float> s0(2 * rows), s1(2 * rows);
  float* outs[2] = {s0.data(), s1.data()};
  q4_weight_matmul_shared(ws, outs, 2, in.data(), 2);
  EXPECT_EQ(s0, b);
  EXPECT_EQ(s1, a);
  const std::uint32_t groups[1] = {1};
  std::vector<float> g(rows, 0.0f);
  q4_weight_matmul_groups(scaled, in.data(), groups, 1, g.data());
  for (std::size_t r = 16; r < rows; ++r) EXPECT_EQ(g[r], b[r]);
  std::vector<float> row_plain(cols), row_scaled(cols);
  q4_load_row_f32(plain, 3, row_plain.data());
  q4_load_row_f32(scaled, 3, row_scaled.data());
  for (std::size_t c = 0; c < cols; ++c) EXPECT_EQ(row_scaled[c], row_plain[c] * factors[3]);
}

}  // namespace
}  // namespace ringlm::kernels
