// The subset-LM-head kernels: matmul_row_list (stored and GGUF block rows) and
// q4_weight_matmul_groups (packed q4_0) give, for the rows they compute, exactly the bits the
// full matmul gives, on every ISA path, single- and multi-threaded, for any row set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "kernels/dequant_ggml.h"
#include "kernels/q4_packed.h"
#include "kernels/q4_weight_matmul.h"
#include "kernels/ref_matmul.h"
#include "test_support.h"
#include "util/error.h"
#include "util/float16.h"

using namespace ringlm;
using namespace ringlm::kernels;

namespace {

std::vector<float> random_floats(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Row sets worth trying for `rows` rows: empty, one (first / last), all, random subsets of
// several sizes (unsorted, with repeats), and a clustered run.
std::vector<std::vector<std::int32_t>> row_sets(std::int64_t rows, std::mt19937& rng) {
  std::vector<std::vector<std::int32_t>> sets;
  sets.push_back({});
  sets.push_back({0});
  sets.push_back({static_cast<std::int32_t>(rows - 1)});
  std::vector<std::int32_t> all(rows);
  std::iota(all.begin(), all.end(), 0);
  sets.push_back(all);
  std::uniform_int_distribution<std::int32_t> id(0, static_cast<std::int32_t>(rows - 1));
  for (std::size_t n : {3u, 40u, 700u}) {
    std::vector<std::int32_t> s(n);
    for (auto& x : s) x = id(rng);
    sets.push_back(s);
  }
  std::vector<std::int32_t> run;
  for (std::int32_t r = static_cast<std::int32_t>(rows / 3); r < rows / 3 + 37 && r < rows; ++r) run.push_back(r);
  sets.push_back(run);
  return sets;
}

// Bit equality (so -0.0 vs 0.0 or a NaN would show).
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST(RowSubset, StoredAndBlockRowsMatchTheFullMatmulBitForBit) {
  std::mt19937 rng(7);
  // 2048 columns: large enough that the row list is split over the pool's threads.
  const std::int64_t R = 600, C = 2048;
  const auto f32 = random_floats(static_cast<std::size_t>(R * C), rng, 0.05f);
  std::vector<std::uint16_t> bf16(f32.size()), f16(f32.size());
  for (std::size_t i = 0; i < f32.size(); ++i) bf16[i] = f32_to_bf16(f32[i]), f16[i] = f32_to_fp16(f32[i]);
  std::vector<std::uint8_t> q8(static_cast<std::size_t>(R) * row_bytes(io::DType::Q8_0, C));
  for (std::int64_t r = 0; r < R; ++r)
    quantize_row(io::DType::Q8_0, f32.data() + r * C, q8.data() + r * row_bytes(io::DType::Q8_0, C), C);
  const auto in = random_floats(static_cast<std::size_t>(C), rng);

  struct Kind {
    const char* name;
    WeightMatrix w;
  };
  Kind kinds[] = {
      {"F32", {io::DType::F32, reinterpret_cast<const std::uint8_t*>(f32.data()), R, C}},
      {"BF16", {io::DType::BF16, reinterpret_cast<const std::uint8_t*>(bf16.data()), R, C}},
      {"F16", {io::DType::F16, reinterpret_cast<const std::uint8_t*>(f16.data()), R, C}},
      {"Q8_0", {io::DType::Q8_0, q8.data(), R, C}},
  };
  ParallelFor pool(3);
  // Block rows take the float row path only with f32 activations (with int8 ones matmul()
  // sends Q8_0 to the int8 kernels, which matmul_row_list refuses: checked below).
  for (Kind& k : kinds) k.w.activations = Q4Activations::f32;
  for (const Kind& k : kinds) {
    std::vector<float> full(R);
    matmul(k.w, in.data(), 1, full.data(), &pool);
    std::vector<float> row(C);
    for (const auto& ids : row_sets(R, rng)) {
      for (ParallelFor* p : {static_cast<ParallelFor*>(nullptr), &pool}) {
        std::vector<float> got(ids.size(), -1.0f);
        matmul_row_list(k.w, in.data(), ids.data(), ids.size(), got.data(), p);
        for (std::size_t i = 0; i < ids.size(); ++i) {
          ASSERT_TRUE(same_bits(got[i], full[ids[i]])) << k.name << " row " << ids[i] << ": " << got[i] << " vs " << full[ids[i]];
          // And the value itself is right: a float64 dot of the decoded row.
          load_row_f32(k.w, ids[i], row.data());
          double ref = 0;
          for (std::int64_t c = 0; c < C; ++c) ref += double(row[c]) * in[c];
          ASSERT_NEAR(got[i], ref, 1e-4 * (1 + std::abs(ref))) << k.name << " row " << ids[i];
        }
      }
    }
  }
}

TEST(RowSubset, PackedQ4GroupsMatchTheFullMatmulOnEveryPath) {
  ringlm::kernels::testing::IsaGuard guard;
  std::mt19937 rng(11);
  // 1500 rows: 94 groups, the last one padded; enough groups for the threaded split.
  const std::size_t R = 1500, C = 256;
  const auto blocks = ringlm::kernels::testing::random_q4_blocks(R, C, rng);
  Q4PackedBuffer packed(R, C);
  q4_pack(blocks.data(), R, C, packed.data());
  WeightMatrix w{io::DType::Q4_0, packed.view().data, static_cast<std::int64_t>(R), static_cast<std::int64_t>(C), true};
  const auto in = random_floats(C, rng);
  for (Isa isa : available_isas()) {
    force_isa(isa);
    for (Q4Activations mode : {Q4Activations::int8, Q4Activations::int8x2}) {
      w.activations = mode;
      std::vector<float> full(R);
      matmul(w, in.data(), 1, full.data(), nullptr);  // the full head's route (q4_weight_matmul)
      std::vector<std::uint32_t> all(packed.view().groups());
      std::iota(all.begin(), all.end(), 0u);
      std::shuffle(all.begin(), all.end(), rng);
      // Shuffled (single groups), then sorted prefixes of it (runs of consecutive groups).
      for (int sorted = 0; sorted < 2; ++sorted)
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{70}, all.size()}) {
        if (sorted) std::sort(all.begin(), all.begin() + n);
        std::vector<float> got(R, -12345.0f);
        q4_weight_matmul_groups(w, in.data(), all.data(), n, got.data());
        std::vector<bool> computed(R, false);
        for (std::size_t i = 0; i < n; ++i)
          for (std::size_t r = all[i] * kQ4GroupRows; r < std::min(R, (all[i] + 1) * kQ4GroupRows); ++r) computed[r] = true;
        for (std::size_t r = 0; r < R; ++r) {
          if (computed[r])
            ASSERT_TRUE(same_bits(got[r], full[r])) << isa_name(isa) << " row " << r << ": " << got[r] << " vs " << full[r];
          else
            ASSERT_EQ(got[r], -12345.0f) << isa_name(isa) << ": row " << r << " of an unlisted group was written";
        }
      }
    }
  }
  const std::uint32_t past = static_cast<std::uint32_t>(packed.view().groups());
  std::vector<float> out(R);
  EXPECT_THROW(q4_weight_matmul_groups(w, in.data(), &past, 1, out.data()), Error);
  // The row-list kernel refuses packed q4_0 on the integer kernels (it would not match them).
  const std::int32_t one = 3;
  EXPECT_THROW(matmul_row_list(w, in.data(), &one, 1, out.data(), nullptr), Error);
}

TEST(RowSubset, Q8BlocksOnTheInt8KernelsAreRefused) {
  const std::int64_t R = 32, C = 64;
  std::vector<std::uint8_t> q8(static_cast<std::size_t>(R) * row_bytes(io::DType::Q8_0, C), 0);
  WeightMatrix w{io::DType::Q8_0, q8.data(), R, C};
  w.activations = Q4Activations::int8;
  std::vector<float> in(C, 1.0f), out(1);
  const std::int32_t id = 3;
  EXPECT_THROW(matmul_row_list(w, in.data(), &id, 1, out.data(), nullptr), ringlm::Error);
}
