// The small-M q4 products (2..8 activation rows: speculative verify steps, small batches;
// on AVX-512 VNNI q4_smallm_vnni_impl.h for 2..3 rows and, with two planes, the group-pair
// form q4_matmul_groups_vnni_pairs for 4..8; the tile elsewhere) called through the kernel table
// on group ranges of every start and length, as the thread pool cuts them: each output
// within float64's tolerance of the exact value and bit-identical to the same row computed
// alone (the decode GEMV), one and two planes, on every path this CPU has.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/kernel_table.h"
#include "kernels/q4_gemm.h"
#include "kernels/q4_packed.h"
#include "kernels/q8_act.h"
#include "test_support.h"

namespace ringlm::kernels {
namespace {

using testing::IsaGuard;

// Output rows [16 g0, 16 g1) of y (row stride ldy) for m activation rows.
bool same_groups(const std::vector<float>& a, const std::vector<float>& b, std::size_t m, std::size_t ldy,
                 std::size_t g0, std::size_t g1) {
  const std::size_t n0 = g0 * kQ4GroupRows, n1 = std::min(ldy, g1 * kQ4GroupRows);
  for (std::size_t i = 0; i < m; ++i)
    if (std::memcmp(a.data() + i * ldy + n0, b.data() + i * ldy + n0, (n1 - n0) * sizeof(float)) != 0) return false;
  return true;
}

TEST(Q4SmallM, GroupRangesMatchFloat64AndTheRowAloneOnEveryPath) {
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  IsaGuard guard;
  // 5 groups (the last 11 rows of 16; odd group ranges leave the pair form a lone group) and
  // 65 blocks: the pair form's K chunk (64 blocks, 6..8 rows) ends one block before the end.
  const std::size_t rows = 75, cols = 2080, nb = cols / 32;
  const auto blocks = testing::random_q4_blocks(rows, cols, rng);
  Q4PackedBuffer wbuf(rows, cols);
  q4_pack(blocks.data(), rows, cols, wbuf.data());
  const Q4Packed w = wbuf.view();
  for (std::size_t m : {2, 3, 4, 5, 6, 7, 8}) {
    const auto x = testing::random_activations(m, cols, rng);
    for (bool two : {false, true}) {
      Q8ActBuffer act, one_act;
      quantize_act(x.data(), m, cols, cols, act, two);
      const Q8ActView v = act.view();
      for (Isa isa : available_isas()) {
        force_isa(isa);
        const KernelTable& k = active_kernels();
        // Each row alone (the GEMV), all groups.
        std::vector<float> alone(m * rows);
        for (std::size_t i = 0; i < m; ++i) {
          quantize_act(x.data() + i * cols, 1, cols, cols, one_act, two);
          k.q4_matmul_groups(w, 0, w.groups(), one_act.view(), alone.data() + i * rows, rows);
        }
        for (std::size_t g0 = 0; g0 < w.groups(); ++g0)
          for (std::size_t g1 = g0 + 1; g1 <= w.groups(); ++g1) {
            std::vector<float> y(m * rows, -777.0f);
            Q8ActView xs = v;
            if (k.prepack_act != nullptr && (g0 + g1) % 2 == 0) xs.tile_pack = k.prepack_act(v, nullptr);  // both ways in
            k.q4_matmul_groups(w, g0, g1, xs, y.data(), rows);
            ASSERT_TRUE(same_groups(y, alone, m, rows, g0, g1))
                << isa_name(isa) << (two ? " two planes" : " one plane") << " m=" << m << " groups [" << g0 << ", "
                << g1 << ") seed " << seed;
            // Rows outside [16 g0, 16 g1) are not written.
            for (std::size_t i = 0; i < m; ++i)
              for (std::size_t n = 0; n < rows; ++n)
                if (n < g0 * kQ4GroupRows || n >= g1 * kQ4GroupRows)
                  ASSERT_EQ(y[i * rows + n], -777.0f) << isa_name(isa) << " m=" << m << " n=" << n;
            if (g0 != 0 || g1 != w.groups()) continue;
            for (std::size_t i = 0; i < m; ++i)
              for (std::size_t n = 0; n < rows; ++n) {
                const auto ref = two ? testing::ref_q4_dot2(blocks.data() + n * nb, v.qs + i * cols, v.qs2 + i * cols,
                                                            v.d2 + i * nb, cols)
                                     : testing::ref_q4_dot(blocks.data() + n * nb, v.qs + i * cols, v.d + i * nb, cols);
                ASSERT_NEAR(y[i * rows + n], ref.value, testing::tolerance(ref, nb))
                    << isa_name(isa) << " m=" << m << " row " << i << " n=" << n << " seed " << seed;
              }
          }
      }
    }
  }
}

}  // namespace
}  // namespace ringlm::kernels
