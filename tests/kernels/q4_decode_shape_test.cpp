// The q4 decode product (one activation row) at E2B's shapes on every path this CPU has,
// against float64 on fresh random inputs, one and two planes. The shapes are long enough
// (48-192 blocks per row, 96-128 groups) that each path's code and scale prefetches run
// ahead across group boundaries and past the matrix's end, which the small shapes of the other
// tests do not reach.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/kernel_table.h"
#include "kernels/q4_gemm.h"
#include "kernels/q4_packed.h"
#include "kernels/q8_act.h"
#include "test_support.h"

namespace ringlm::kernels {
namespace {

TEST(Q4DecodeShape, OneRowAtE2BShapesMatchesFloat64OnEveryPath) {
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  testing::IsaGuard guard;
  struct Shape {
    std::size_t rows, cols;
  };
  // q/k/v-like (1536 -> 2048) and down-like (6144 -> 1536).
  for (const Shape s : {Shape{2048, 1536}, Shape{1536, 6144}}) {
    const std::size_t nb = s.cols / 32;
    const auto blocks = testing::random_q4_blocks(s.rows, s.cols, rng);
    Q4PackedBuffer wbuf(s.rows, s.cols);
    q4_pack(blocks.data(), s.rows, s.cols, wbuf.data());
    const Q4Packed w = wbuf.view();
    const auto x = testing::random_activations(1, s.cols, rng);
    for (bool two : {false, true}) {
      Q8ActBuffer act;
      quantize_act(x.data(), 1, s.cols, s.cols, act, two);
      const Q8ActView v = act.view();
      for (Isa isa : available_isas()) {
        force_isa(isa);
        std::vector<float> y(s.rows);
        active_kernels().q4_matmul_groups(w, 0, w.groups(), v, y.data(), s.rows);
        for (std::size_t n = 0; n < s.rows; ++n) {
          const auto ref = two ? testing::ref_q4_dot2(blocks.data() + n * nb, v.qs, v.qs2, v.d2, s.cols)
                               : testing::ref_q4_dot(blocks.data() + n * nb, v.qs, v.d, s.cols);
          ASSERT_NEAR(y[n], ref.value, testing::tolerance(ref, nb))
              << isa_name(isa) << (two ? " two planes" : " one plane") << " " << s.rows << "x" << s.cols << " row " << n
              << " seed " << seed;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ringlm::kernels
