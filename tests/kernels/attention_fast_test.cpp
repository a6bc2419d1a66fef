// The tiled attention (attention.h) on every ISA path the build and CPU have, forced one at a
// time, against (1) a float64 softmax-attention written out here and (2) the reference
// attend_one (ref_ops.h), on fresh random caches: full caches, wrapped rings (slot order !=
// position order), holes and future positions, sliding windows, chunks of 1/7/64 tokens,
// head groups 1 and 8, head_dim 256 and 512, and extreme scores. Plus its exp, and the
// properties the model relies on (thread count and chunking do not change a bit).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/dispatch.h"
#include "kernels/ref_ops.h"
#include "kernels/ref_parallel.h"
#include "test_support.h"
#include "util/error.h"

using namespace ringlm::kernels;

namespace {

enum class Layout { full, ring, holes };

struct Case {
  int n_tokens, n_heads, n_kv, d, n_slots, window;
  Layout layout;
  std::int64_t end;     // positions [end - n_tokens, end) are the chunk; the cache holds up to end - 1
  float q_mag = 1.0f;   // query magnitude: 1 gives scores ~N(0,1); 30 gives |scores| in the hundreds
  bool shuffle_tokens = false;
  std::string name() const {
    return "n=" + std::to_string(n_tokens) + " heads=" + std::to_string(n_heads) + "/" + std::to_string(n_kv) +
           " d=" + std::to_string(d) + " slots=" + std::to_string(n_slots) + " window=" + std::to_string(window) +
           " layout=" + std::to_string(static_cast<int>(layout)) + " end=" + std::to_string(end) +
           " qmag=" + std::to_string(q_mag);
  }
};

struct Data {
  std::vector<float> q, k, v;
  std::vector<std::int32_t> pos;
  std::vector<std::int64_t> q_pos;
  KvSlots view() const {
    return {k.data(), v.data(), pos.data(), static_cast<int>(pos.size()), n_kv, d};
  }
  int n_kv = 1, d = 0;
};

Data make_data(const Case& c, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Data x;
  x.n_kv = c.n_kv;
  x.d = c.d;
  x.q.resize(static_cast<std::size_t>(c.n_tokens) * c.n_heads * c.d);
  x.k.resize(static_cast<std::size_t>(c.n_slots) * c.n_kv * c.d);
  x.v.resize(x.k.size());
  for (auto& f : x.q) f = c.q_mag * nd(rng);
  for (auto* vec : {&x.k, &x.v})
    for (auto& f : *vec) f = nd(rng);
  x.pos.assign(c.n_slots, -1);
  switch (c.layout) {
    case Layout::full:  // slot = position, filled up to end - 1
      for (std::int64_t p = 0; p < std::min<std::int64_t>(c.end, c.n_slots); ++p) x.pos[p] = static_cast<std::int32_t>(p);
      break;
    case Layout::ring:  // slot = position % ring, the last n_slots positions (wrapped once end > n_slots)
      for (std::int64_t p = std::max<std::int64_t>(0, c.end - c.n_slots); p < c.end; ++p)
        x.pos[p % c.n_slots] = static_cast<std::int32_t>(p);
      break;
    case Layout::holes: {  // a ring with ~1/6 of its slots empty and a few stale future positions
      for (std::int64_t p = std::max<std::int64_t>(0, c.end - c.n_slots); p < c.end; ++p)
        x.pos[p % c.n_slots] = static_cast<std::int32_t>(p);
      std::uniform_int_distribution<int> pick(0, 5);
      for (auto& p : x.pos) {
        if (pick(rng) == 0) {
          p = -1;
        } else if (pick(rng) == 0 && p >= 0) {
          p = static_cast<std::int32_t>(c.end + 1000 + p);  // never visible
        }
      }
      break;
    }
  }
  for (int t = 0; t < c.n_tokens; ++t) x.q_pos.push_back(c.end - c.n_tokens + t);
  if (c.shuffle_tokens) std::shuffle(x.q_pos.begin(), x.q_pos.end(), rng);
  return x;
}

bool visible(std::int64_t p, std::int64_t qp, int window) {
  return p >= 0 && p <= qp && (window <= 0 || qp - p < window);
}

// float64 attention, plus per (token, head) row the bound the float32 kernels must meet:
//   |err| <= vmax * (2 * ds + 1e-6), ds = sqrt(d) * eps32 * A,
// with A = max over visible slots of scale * sum_i |q_i k_i| (what a float32 dot of d terms
// can lose: rounding errors of the products and partial sums add like a random walk,
// ~sqrt(d) * eps * A), 2 * ds the most a softmax output moves when every score moves by ds
// (out = sum p_i v_i with sum p_i = 1), and 1e-6 for the exp (< 1 ulp measured) and the
// float32 sums of p and p * v over up to ~1k slots (again ~sqrt(n) eps). The float32
// reference attend_one is held to the same bound.
struct Reference {
  std::vector<double> out;
  std::vector<double> tol;  // per row
};

Reference reference(const Case& c, const Data& x, float scale) {
  const int group = c.n_heads / c.n_kv, d = c.d;
  Reference r;
  r.out.assign(x.q.size(), 0.0);
  r.tol.assign(static_cast<std::size_t>(c.n_tokens) * c.n_heads, 0.0);
  std::vector<double> sc;
  std::vector<int> slots;
  for (int t = 0; t < c.n_tokens; ++t)
    for (int h = 0; h < c.n_heads; ++h) {
      const std::size_t row = static_cast<std::size_t>(t) * c.n_heads + h;
      const float* qr = x.q.data() + row * d;
      const int g = h / group;
      sc.clear();
      slots.clear();
      double amax = 0, vmax = 0;
      for (int s = 0; s < c.n_slots; ++s) {
        if (!visible(x.pos[s], x.q_pos[t], c.window)) continue;
        const float* ks = x.k.data() + (static_cast<std::size_t>(s) * c.n_kv + g) * d;
        const float* vs = x.v.data() + (static_cast<std::size_t>(s) * c.n_kv + g) * d;
        double dot = 0, adot = 0;
        for (int i = 0; i < d; ++i) {
          dot += static_cast<double>(qr[i]) * ks[i];
          adot += std::abs(static_cast<double>(qr[i]) * ks[i]);
          vmax = std::max(vmax, std::abs(static_cast<double>(vs[i])));
        }
        sc.push_back(scale * dot);
        amax = std::max(amax, scale * adot);
        slots.push_back(s);
      }
      if (sc.empty()) continue;  // nothing visible: zeros
      const double mx = *std::max_element(sc.begin(), sc.end());
      double den = 0;
      for (auto& e : sc) den += (e = std::exp(e - mx));
      for (std::size_t j = 0; j < sc.size(); ++j) {
        const float* vs = x.v.data() + (static_cast<std::size_t>(slots[j]) * c.n_kv + g) * d;
        for (int i = 0; i < d; ++i) r.out[row * d + i] += sc[j] / den * vs[i];
      }
      const double ds = std::sqrt(static_cast<double>(d)) * std::numeric_limits<float>::epsilon() * amax;
      r.tol[row] = vmax * (2 * ds + 1e-6);
    }
  return r;
}

std::vector<float> run_fast(const Case& c, const Data& x, float scale, ParallelFor* pool) {
  std::vector<float> out(x.q.size(), 12345.0f);  // poison: every element must be written
  attend(x.q.data(), c.n_tokens, x.q_pos.data(), c.n_heads, x.view(), c.window, scale, out.data(), pool);
  return out;
}

std::vector<float> run_ref_f32(const Case& c, const Data& x, float scale) {
  const KvSlots kv = x.view();
  std::vector<float> scratch(attend_scratch_floats(c.n_heads, kv)), out(x.q.size());
  const std::size_t row = static_cast<std::size_t>(c.n_heads) * c.d;
  for (int t = 0; t < c.n_tokens; ++t)
    attend_one(x.q.data() + t * row, c.n_heads, x.q_pos[t], kv, c.window, scale, scratch.data(),
               out.data() + t * row);
  return out;
}

// The E2B-like shapes and the corner cases the brief lists.
std::vector<Case> cases() {
  return {
      // Sliding layer: d=256, window 512 on a 576-slot ring, wrapped (positions not monotonic in slots).
      {1, 8, 1, 256, 576, 512, Layout::ring, 3001},
      {7, 8, 1, 256, 576, 512, Layout::ring, 3001},
      {64, 8, 1, 256, 576, 512, Layout::ring, 3001},
      {64, 8, 1, 256, 576, 512, Layout::holes, 1500},
      // Full layer: d=512, 8 query heads on 1 KV head, slot = position, capacity beyond the end.
      {1, 8, 1, 512, 1200, 0, Layout::full, 1100},
      {7, 8, 1, 512, 1200, 0, Layout::full, 1100},
      {64, 8, 1, 512, 1200, 0, Layout::full, 64},  // first chunk: causal inside the chunk only
      {64, 8, 1, 512, 700, 0, Layout::holes, 650},
      // Decode with 12 heads on 1 KV head: on AVX-512 a block of 8 heads, then 4 (the
      // single-token blocking); a partial last tile (333 slots) and a slot split with 2 threads.
      {1, 12, 1, 512, 333, 0, Layout::full, 330},
      // Group 1 (one query head per KV head), several KV heads; small odd head_dim for the tails.
      {7, 4, 4, 256, 300, 0, Layout::holes, 300},
      {1, 4, 4, 512, 400, 0, Layout::ring, 1000},
      {7, 6, 3, 20, 50, 9, Layout::ring, 77},
      {1, 2, 2, 3, 300, 0, Layout::holes, 290},
      // Extreme scores: |q.k| scale in the hundreds (softmax ~one-hot; max subtraction matters).
      {7, 8, 1, 256, 576, 512, Layout::ring, 2000, 30.0f},
      {1, 8, 1, 512, 600, 0, Layout::full, 600, 30.0f},
      // Query tokens in shuffled order (positions still those of the chunk).
      {7, 8, 1, 256, 576, 100, Layout::ring, 900, 1.0f, true},
      // Nothing visible: the window excludes everything / empty cache.
      {7, 8, 1, 64, 64, 0, Layout::holes, 0},
  };
}

}  // namespace

TEST(FastAttention, MatchesFloat64AndReferenceOnEveryIsa) {
  ringlm::kernels::testing::IsaGuard guard;
  std::mt19937 rng(20261130);
  ParallelFor one(1), two(2);
  double worst_ratio = 0;
  for (const Case& c : cases()) {
    const Data x = make_data(c, rng);
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
    const Reference ref = reference(c, x, scale);
    const std::vector<float> ref32 = run_ref_f32(c, x, scale);
    for (std::size_t i = 0; i < ref32.size(); ++i)
      ASSERT_LE(std::abs(ref32[i] - ref.out[i]), ref.tol[i / c.d]) << c.name() << " attend_one itself, i " << i;
    for (Isa isa : available_isas()) {
      force_isa(isa);
      for (ParallelFor* pool : {&one, &two}) {
        const std::vector<float> out = run_fast(c, x, scale, pool);
        for (std::size_t i = 0; i < out.size(); ++i) {
          const std::size_t row = i / c.d;
          const double tol = ref.tol[row];
          ASSERT_LE(std::abs(out[i] - ref.out[i]), tol)
              << c.name() << " isa " << isa_name(isa) << " threads " << pool->size() << " i " << i;
          // The reference float32 kernel meets the same bound, so the two are within 2x of it.
          ASSERT_LE(std::abs(out[i] - ref32[i]), 2 * tol)
              << c.name() << " isa " << isa_name(isa) << " vs attend_one, i " << i;
          if (tol > 0) worst_ratio = std::max(worst_ratio, std::abs(out[i] - ref.out[i]) / tol);
          if (tol == 0) {
            ASSERT_EQ(out[i], 0.0f) << c.name() << " nothing visible must give zeros";
          }
        }
      }
    }
  }
  std::printf("worst |err| / bound over all cases and paths: %.3f\n", worst_ratio);
}

// A chunk's result per token does not depend on the thread count or on how the chunk is cut
// (the model's prefill and its decode of the same tokens agree bit for bit), as long as the
// decode does not split the slots over threads (the only path with another summation order).
TEST(FastAttention, ChunkingAndThreadsAreBitIdentical) {
  ringlm::kernels::testing::IsaGuard guard;
  std::mt19937 rng(7);
  ParallelFor one(1), two(2), three(3);
  const Case c{13, 8, 2, 256, 576, 512, Layout::holes, 2500};
  const Data x = make_data(c, rng);
  for (Isa isa : available_isas()) {
    force_isa(isa);
    const std::vector<float> whole = run_fast(c, x, 0.0625f, &one);
    for (ParallelFor* pool : {&two, &three})
      ASSERT_EQ(run_fast(c, x, 0.0625f, pool), whole) << isa_name(isa) << " threads " << pool->size();
    const std::size_t row = static_cast<std::size_t>(c.n_heads) * c.d;
    std::vector<float> single(row);
    for (int t = 0; t < c.n_tokens; ++t) {
      attend(x.q.data() + t * row, 1, &x.q_pos[t], c.n_heads, x.view(), c.window, 0.0625f, single.data(), nullptr);
      for (std::size_t i = 0; i < row; ++i)
        ASSERT_EQ(single[i], whole[t * row + i]) << isa_name(isa) << " token " << t << " i " << i;
    }
  }
}

namespace {

// `heads` query heads of `x` over its one KV head against the same heads over `copies`
// identical copies of that KV head (heads / copies per copy): every path, f32 and f16, bit for
// bit. The copies block the heads differently, so this checks that blocking changes no bits.
void expect_same_over_copied_kv(const Data& x, int n_slots, int d, int n_tokens, int heads, int copies,
                                const std::string& what) {
  ParallelFor one(1);
  std::vector<std::uint16_t> k16(x.k.size()), v16(x.v.size());
  kv_store_f16(x.k.data(), k16.data(), k16.size());
  kv_store_f16(x.v.data(), v16.data(), v16.size());
  std::vector<float> kc, vc;  // each slot's K/V row repeated for every KV head
  std::vector<std::uint16_t> kc16, vc16;
  for (int s = 0; s < n_slots; ++s)
    for (int g = 0; g < copies; ++g) {
      kc.insert(kc.end(), x.k.begin() + s * d, x.k.begin() + (s + 1) * d);
      vc.insert(vc.end(), x.v.begin() + s * d, x.v.begin() + (s + 1) * d);
      kc16.insert(kc16.end(), k16.begin() + s * d, k16.begin() + (s + 1) * d);
      vc16.insert(vc16.end(), v16.begin() + s * d, v16.begin() + (s + 1) * d);
    }
  for (bool half : {false, true}) {
    KvSlots grouped = x.view(), split{kc.data(), vc.data(), x.pos.data(), n_slots, copies, d};
    if (half) {
      grouped.type = split.type = KvType::f16;
      grouped.k = grouped.v = split.k = split.v = nullptr;
      grouped.k16 = k16.data();
      grouped.v16 = v16.data();
      split.k16 = kc16.data();
      split.v16 = vc16.data();
    }
    for (Isa isa : available_isas()) {
      force_isa(isa);
      std::vector<float> a(x.q.size()), b(x.q.size());
      attend(x.q.data(), n_tokens, x.q_pos.data(), heads, grouped, 0, 0.05f, a.data(), &one);
      attend(x.q.data(), n_tokens, x.q_pos.data(), heads, split, 0, 0.05f, b.data(), &one);
      ASSERT_EQ(a, b) << isa_name(isa) << " d " << d << " " << what << (half ? " f16" : " f32");
    }
  }
}

}  // namespace

// A head's result does not depend on how many query heads share its KV head (the kernel
// blocks up to 4 rows together and, on AVX-512, sums 16 scores at once): 8 heads over
// one KV head must equal, bit for bit, the same 8 heads over 8 (or 2) identical copies of
// it. Slot counts leave partial tiles and partial slot blocks (the per-score sums), chunks
// of 1 and 5 tokens, f32 and f16 caches.
TEST(FastAttention, HeadBlockingIsBitIdentical) {
  ringlm::kernels::testing::IsaGuard guard;
  std::mt19937 rng(31);
  for (int d : {256, 512, 48})
    for (int n_tokens : {1, 5}) {
      const Case c{n_tokens, 8, 1, d, 101, 0, Layout::holes, 100};
      const Data x = make_data(c, rng);
      for (int copies : {2, 8})
        expect_same_over_copied_kv(x, c.n_slots, d, n_tokens, 8, copies,
                                   "tokens " + std::to_string(n_tokens) + " copies " + std::to_string(copies));
    }
}

// A single-token (decode) block blocks the heads differently from a chunk (8 at a time on
// AVX-512, then the remainder in 4, 3, 2, 1) and prefetches the next tile: a head's result
// must still equal, bit for bit, the same head alone on its own copy of the KV head (group 1,
// the one-row blocking), for groups that leave each remainder, with slot counts that leave
// partial tiles, odd slot blocks and tiles not followed by a full one (the prefetch's end),
// f32 and f16, head sizes with and without a register tail.
TEST(FastAttention, DecodeHeadBlocksAreBitIdentical) {
  ringlm::kernels::testing::IsaGuard guard;
  std::mt19937 rng(47);
  for (int d : {512, 48, 20})
    for (int heads : {8, 9, 10, 11, 12, 16, 19})
      for (int n_slots : {31, 65, 101}) {
        const Case c{1, heads, 1, d, n_slots, 0, Layout::holes, n_slots};
        const Data x = make_data(c, rng);
        expect_same_over_copied_kv(x, n_slots, d, 1, heads, heads,
                                   "heads " + std::to_string(heads) + " slots " + std::to_string(n_slots));
      }
}

// Decode with the slots split over threads merges partial softmax states; check the merge
// where the parts see very different maxima (one part holds a dominant score) and where a
// part sees nothing at all (its slots are empty or outside the window).
TEST(FastAttention, DecodeSlotSplitMerge) {
  ringlm::kernels::testing::IsaGuard guard;
  std::mt19937 rng(11);
  ParallelFor two(2), three(3);
  for (int variant = 0; variant < 3; ++variant) {
    Case c{1, 8, 1, 256, 1024, 0, Layout::full, 1024};
    if (variant == 2) c = Case{1, 8, 1, 256, 1024, 0, Layout::full, 400};  // the upper parts are empty
    Data x = make_data(c, rng);
    if (variant == 1) {  // slot 900's key aligned with every head's query: its score dominates
      for (int i = 0; i < c.d; ++i) x.k[900 * c.d + i] = 0.0f;
      for (int h = 0; h < c.n_heads; ++h)
        for (int i = 0; i < c.d; ++i) x.k[900 * c.d + i] += x.q[h * c.d + i];
    }
    const float scale = 1.0f / 16;
    const Reference ref = reference(c, x, scale);
    for (Isa isa : available_isas()) {
      force_isa(isa);
      for (ParallelFor* pool : {&two, &three}) {
        const std::vector<float> out = run_fast(c, x, scale, pool);
        for (std::size_t i = 0; i < out.size(); ++i)
          ASSERT_LE(std::abs(out[i] - ref.out[i]), ref.tol[i / c.d])
              << "variant " << variant << " " << isa_name(isa) << " threads " << pool->size() << " i " << i;
      }
    }
  }
}

// The batched decode step attends every sequence's decode row in one pool call
// (attend_rows): each row must get exactly what attend gives it alone with the pool, on
// every path, for caches of different lengths and layouts; a cache long enough for attend
// to split its slots is refused.
TEST(FastAttention, DecodeRowsOfSeveralCachesAreBitIdenticalToEachAlone) {
  ringlm::kernels::testing::IsaGuard guard;
  std::mt19937 rng(23);
  ParallelFor two(2);
  const std::vector<Case> rows_cases = {{1, 8, 1, 256, 576, 512, Layout::ring, 200},
                                        {1, 8, 1, 256, 576, 512, Layout::holes, 150},
                                        {1, 8, 1, 512, 1200, 0, Layout::full, 17},
                                        {1, 8, 1, 256, 576, 512, Layout::ring, 1},
                                        {1, 8, 1, 256, 576, 512, Layout::full, 250}};
  std::vector<Data> data;
  for (const Case& c : rows_cases) {
    data.push_back(make_data(c, rng));
    data.back().pos.resize(static_cast<std::size_t>(std::min<std::int64_t>(c.end, 255)));  // the used slots only
  }
  const float scale = 1.0f / 16;
  for (Isa isa : available_isas()) {
    force_isa(isa);
    for (int window : {0, 100}) {
      std::vector<std::vector<float>> alone, batched;
      std::vector<AttendRow> rows;
      for (std::size_t i = 0; i < data.size(); ++i) {
        const Data& x = data[i];
        ASSERT_FALSE(attend_splits_slots(x.view(), &two));
        alone.push_back(std::vector<float>(x.q.size()));
        attend(x.q.data(), 1, x.q_pos.data(), 8, x.view(), window, scale, alone.back().data(), &two);
        batched.push_back(std::vector<float>(x.q.size(), 12345.0f));
      }
      for (std::size_t i = 0; i < data.size(); ++i)
        rows.push_back({data[i].q.data(), data[i].q_pos.data(), data[i].view(), batched[i].data()});
      attend_rows(rows.data(), rows.size(), 8, window, scale, &two);
      for (std::size_t i = 0; i < data.size(); ++i)
        ASSERT_EQ(std::memcmp(alone[i].data(), batched[i].data(), alone[i].size() * sizeof(float)), 0)
            << isa_name(isa) << " row " << i << " window " << window;
    }
  }
  Case long_case{1, 8, 1, 256, 1024, 0, Layout::full, 1024};
  Data x = make_data(long_case, rng);
  EXPECT_TRUE(attend_splits_slots(x.view(), &two));
  EXPECT_FALSE(attend_splits_slots(x.view(), nullptr));
  std::vector<float> out(x.q.size());
  AttendRow r{x.q.data(), x.q_pos.data(), x.view(), out.data()};
  EXPECT_THROW(attend_rows(&r, 1, 8, 0, scale, &two), ringlm::Error);
}

TEST(FastAttention, RejectsInconsistentShapes) {
  std::vector<float> q(8 * 16), out(q.size()), kv(16 * 3 * 16);
  std::vector<std::int32_t> pos(16, 0);
  const std::int64_t qp = 0;
  KvSlots bad{kv.data(), kv.data(), pos.data(), 16, 3, 16};  // 8 query heads over 3 kv heads
  EXPECT_THROW(attend(q.data(), 1, &qp, 8, bad, 0, 1.0f, out.data()), ringlm::Error);
  KvSlots no_data{nullptr, nullptr, nullptr, 16, 1, 16};
  EXPECT_THROW(attend(q.data(), 1, &qp, 8, no_data, 0, 1.0f, out.data()), ringlm::Error);
  KvSlots zero_dim{kv.data(), kv.data(), pos.data(), 16, 1, 0};
  EXPECT_THROW(attend(q.data(), 1, &qp, 8, zero_dim, 0, 1.0f, out.data()), ringlm::Error);
}

// The vectorised exp of each path against float64 std::exp: within 3 ulp (relative 3 * 2^-23)
// over the range attention uses (x <= 0 down to the smallest normal result) and up to 88;
// exact 0 below ln(2^-126) and for -inf, exact 1 at 0. Every input of a vector is checked,
// and every ulp counts: the dense grid has ~1.7 million points.
TEST(FastAttention, ExpWithinThreeUlp) {
  ringlm::kernels::testing::IsaGuard guard;
  std::vector<float> x, y;
  for (double u = -87.33; u <= 88.0; u += 1e-4) x.push_back(static_cast<float>(u));
  for (float special : {0.0f, -0.0f, -1e-30f, 1e-30f, -0.34657359f, 0.34657359f, -87.3365f}) x.push_back(special);
  y.resize(x.size());
  for (Isa isa : available_isas()) {
    force_isa(isa);
    attention_exp(x.data(), y.data(), x.size());
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double want = std::exp(static_cast<double>(x[i]));
      if (want < std::numeric_limits<float>::min()) continue;  // subnormal results: absolute error < 2^-149
      worst = std::max(worst, std::abs(y[i] - want) / want);
    }
    EXPECT_LT(worst, 3 * std::ldexp(1.0, -23)) << isa_name(isa);
    std::printf("%s: exp worst relative error %.3g (%.2f ulp of 2^-23)\n", isa_name(isa), worst,
                worst / std::ldexp(1.0, -23));
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> edge = {0.0f, -inf, -87.4f, -100.0f, -1e30f}, got(edge.size());
    attention_exp(edge.data(), got.data(), edge.size());
    EXPECT_EQ(got[0], 1.0f) << isa_name(isa);
    for (std::size_t i = 1; i < edge.size(); ++i) EXPECT_EQ(got[i], 0.0f) << isa_name(isa) << " x " << edge[i];
  }
}
