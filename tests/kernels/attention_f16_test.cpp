// The f16 KV cache in the attention kernels (attention.h): kv_store_f16 / kv_widen_f16 on
// every ISA path against the scalar IEEE rules of util/float16.h (all 2^32 float patterns
// would take too long; every half pattern, the rounding ties and the range edges are
// covered), and attend() over an f16 cache bit-identical to attend() over the f32 cache of
// the widened values, on every path, for chunks, decode with and without the slot split,
// rings with holes and odd head sizes (the scalar tails). The float64 check of the f16 path
// is tests/kernels/attention_numpy_test.py; the model-level bound is in docs/attention.md.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "kernels/dispatch.h"
#include "kernels/ref_ops.h"
#include "kernels/ref_parallel.h"
#include "test_support.h"
#include "util/error.h"
#include "util/float16.h"

using namespace ringlm;
using namespace ringlm::kernels;

namespace {

std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// The expected stored half: saturate, then IEEE round to nearest even.
std::uint16_t want_half(float x) { return f32_to_fp16(std::min(std::max(x, -65504.0f), 65504.0f)); }

std::vector<float> store_inputs() {
  std::vector<float> x;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (int i = 0; i < 4000; ++i) x.push_back(nd(rng));
  // Exact ties between two halves (the float halfway between consecutive halves), both
  // parities, in the normal and the subnormal range, and their neighbours one float ulp away.
  for (std::uint16_t h : {0x3c00, 0x3c01, 0x4500, 0x7bfe, 0x0001, 0x0002, 0x0200, 0x03ff, 0x0400}) {
    const float lo = fp16_to_f32(h), hi = fp16_to_f32(static_cast<std::uint16_t>(h + 1));
    const float mid = (lo + hi) / 2;  // exact in float
    for (float v : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      x.push_back(v);
      x.push_back(-v);
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, 70000.0f, 1e30f, inf, -65520.0f, -1e30f, -inf,
                  5.9604645e-8f, 2.9802322e-8f, 2.98023259e-8f, 1e-10f, -1e-10f, 6.1035156e-5f, 6.1e-5f})
    x.push_back(v);
  return x;
}

}  // namespace

TEST(F16Kv, StoreMatchesScalarRoundingOnEveryIsa) {
  kernels::testing::IsaGuard guard;
  const std::vector<float> x = store_inputs();
  for (Isa isa : available_isas()) {
    force_isa(isa);
    // Every start offset 0..16 so each value is seen in a register lane and in the tail.
    for (std::size_t off = 0; off <= 16; ++off) {
      std::vector<std::uint16_t> y(x.size() - off, 0xdead);
      kv_store_f16(x.data() + off, y.data(), y.size());
      for (std::size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(y[i], want_half(x[off + i])) << isa_name(isa) << " x=" << x[off + i] << " bits " << std::hex
                                               << bits(x[off + i]);
    }
  }
  // Saturation, not inf: the largest finite half either way.
  EXPECT_EQ(want_half(std::numeric_limits<float>::infinity()), 0x7bff);
  EXPECT_EQ(want_half(-1e30f), 0xfbff);
}

TEST(F16Kv, WidenIsExactForEveryHalfOnEveryIsa) {
  kernels::testing::IsaGuard guard;
  std::vector<std::uint16_t> h(65536 + 7);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<std::uint16_t>(i);
  std::vector<float> y(h.size());
  for (Isa isa : available_isas()) {
    force_isa(isa);
    kv_widen_f16(h.data(), y.data(), h.size());
    for (std::size_t i = 0; i < h.size(); ++i) {
      const float want = fp16_to_f32(h[i]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(y[i])) << isa_name(isa) << " half " << std::hex << h[i];
        continue;
      }
      ASSERT_EQ(bits(y[i]), bits(want)) << isa_name(isa) << " half " << std::hex << h[i];
    }
  }
}

namespace {

struct Problem {
  int n_tokens, n_heads, n_kv, d, n_slots, window;
  std::int64_t end;
  bool holes;
};

}  // namespace

// attend() over f16 K/V equals attend() over f32 K/V holding the widened halves, bit for bit,
// on every path and thread count (the f16 kernels differ only in their loads). And the
// reference attend_one reads f16 caches the same way.
TEST(F16Kv, AttendOverHalvesEqualsAttendOverWidenedFloats) {
  kernels::testing::IsaGuard guard;
  std::mt19937 rng(99);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ParallelFor one(1), two(2);
  const Problem problems[] = {
      {1, 8, 1, 256, 576, 512, 3001, false},   // sliding decode, wrapped ring
      {64, 8, 1, 256, 576, 512, 2000, true},   // sliding chunk, holes
      {1, 8, 1, 512, 1200, 0, 1100, false},    // full decode: the slot split on two threads
      {7, 8, 1, 512, 700, 0, 650, true},       // full chunk with holes
      {7, 6, 3, 20, 50, 9, 77, false},         // odd head_dim: scalar tails of the loads
      {1, 2, 2, 3, 300, 0, 290, true},
  };
  for (const Problem& p : problems) {
    const std::size_t kv_n = static_cast<std::size_t>(p.n_slots) * p.n_kv * p.d;
    std::vector<float> q(static_cast<std::size_t>(p.n_tokens) * p.n_heads * p.d), k(kv_n), v(kv_n);
    for (auto& f : q) f = nd(rng);
    for (auto& f : k) f = 4.0f * nd(rng);
    for (auto& f : v) f = nd(rng);
    std::vector<std::uint16_t> k16(kv_n), v16(kv_n);
    std::vector<float> kw(kv_n), vw(kv_n);
    for (std::size_t i = 0; i < kv_n; ++i) {
      k16[i] = want_half(k[i]);
      v16[i] = want_half(v[i]);
      kw[i] = fp16_to_f32(k16[i]);
      vw[i] = fp16_to_f32(v16[i]);
    }
    std::vector<std::int32_t> pos(p.n_slots, -1);
    for (std::int64_t x = std::max<std::int64_t>(0, p.end - p.n_slots); x < p.end; ++x)
      pos[x % p.n_slots] = static_cast<std::int32_t>(x);
    if (p.holes)
      for (int s = 0; s < p.n_slots; s += 6) pos[s] = -1;
    std::vector<std::int64_t> qpos;
    for (int t = 0; t < p.n_tokens; ++t) qpos.push_back(p.end - p.n_tokens + t);
    const KvSlots wide{kw.data(), vw.data(), pos.data(), p.n_slots, p.n_kv, p.d};
    const KvSlots half{nullptr, nullptr, pos.data(), p.n_slots, p.n_kv, p.d, KvType::f16, k16.data(), v16.data()};
    const float scale = 1.0f / std::sqrt(static_cast<float>(p.d));
    for (Isa isa : available_isas()) {
      force_isa(isa);
      for (ParallelFor* pool : {&one, &two}) {
        std::vector<float> a(q.size(), 1.0f), b(q.size(), 2.0f);
        attend(q.data(), p.n_tokens, qpos.data(), p.n_heads, wide, p.window, scale, a.data(), pool);
        attend(q.data(), p.n_tokens, qpos.data(), p.n_heads, half, p.window, scale, b.data(), pool);
        ASSERT_EQ(a, b) << isa_name(isa) << " threads " << pool->size() << " n=" << p.n_tokens << " d=" << p.d;
      }
    }
    // The reference, one token at a time.
    const std::size_t row = static_cast<std::size_t>(p.n_heads) * p.d;
    std::vector<float> s1(attend_scratch_floats(p.n_heads, wide)), s2(attend_scratch_floats(p.n_heads, half));
    std::vector<float> a(row), b(row);
    for (int t = 0; t < p.n_tokens; ++t) {
      attend_one(q.data() + t * row, p.n_heads, qpos[t], wide, p.window, scale, s1.data(), a.data());
      attend_one(q.data() + t * row, p.n_heads, qpos[t], half, p.window, scale, s2.data(), b.data());
      ASSERT_EQ(a, b) << "attend_one token " << t << " d=" << p.d;
    }
  }
}

TEST(F16Kv, RejectsAnF16ViewWithoutHalves) {
  std::vector<float> q(8 * 16), out(q.size()), kv(16 * 16);
  std::vector<std::int32_t> pos(16, 0);
  const std::int64_t qp = 0;
  const KvSlots floats_only{kv.data(), kv.data(), pos.data(), 16, 1, 16, KvType::f16};
  EXPECT_THROW(attend(q.data(), 1, &qp, 8, floats_only, 0, 1.0f, out.data()), ringlm::Error);
}
