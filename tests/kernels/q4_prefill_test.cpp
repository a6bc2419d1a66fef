// The q4 prefill GEMM (17+ activation rows; q4_prefill_vnni_impl.h on AVX-512 VNNI, the tile
// elsewhere) on fresh random inputs: every output within float64's tolerance of the exact
// w4a8 value, and bit-identical to the existing kernels (the multi-row tile on slices of
// at most 16 rows, and each row alone through the decode GEMV), one and two planes, on
// group ranges as the pool cuts them, on every path this CPU has. Also: the activation
// quantizer and the tile packing split over a pool give the serial bytes.
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
#include "kernels/thread_pool.h"
#include "test_support.h"

namespace ringlm::kernels {
namespace {

using testing::IsaGuard;

// Rows [m0, m0 + m) of an activation view (the kernels read rows through qs / d / bias).
Q8ActView row_slice(const Q8ActView& v, std::size_t m0, std::size_t m) {
  Q8ActView s = v;
  const std::size_t nb = v.cols / 32;
  s.rows = m;
  s.qs += m0 * v.cols;
  s.d += m0 * nb;
  s.bias += m0 * nb;
  if (v.qs2 != nullptr) {
    s.qs2 += m0 * v.cols;
    s.d2 += m0 * nb;
    s.bias2 += m0 * nb;
  }
  s.tile_pack = nullptr;
  return s;
}

struct Shape {
  std::size_t m, rows, cols;
};

// Restores the prefill switch (dispatch.h) to what it was.
struct PrefillSwitchGuard {
  bool saved = q4_prefill_gemm();
  ~PrefillSwitchGuard() { set_q4_prefill_gemm(saved); }
};

TEST(Q4Prefill, MatchesFloat64AndTheExistingKernelsBitForBit) {
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  IsaGuard guard;
  PrefillSwitchGuard sw;
  ThreadPool pool(2);
  // Output rows 75 (5 groups, the last of 11 rows: an odd group count leaves one group
  // without a partner) and 33 / 128; input widths of an odd number of blocks, below, at and
  // above the kernel's K chunk of 32 blocks.
  const Shape shapes[] = {{17, 75, 1056}, {31, 33, 96}, {64, 128, 2080}, {100, 75, 544}, {23, 16, 32}};
  for (const Shape& s : shapes) {
    const std::size_t nb = s.cols / 32;
    const auto blocks = testing::random_q4_blocks(s.rows, s.cols, rng);
    Q4PackedBuffer wbuf(s.rows, s.cols);
    q4_pack(blocks.data(), s.rows, s.cols, wbuf.data());
    const Q4Packed w = wbuf.view();
    const auto x = testing::random_activations(s.m, s.cols, rng);
    for (bool two : {false, true}) {
      Q8ActBuffer act;
      quantize_act(x.data(), s.m, s.cols, s.cols, act, two);
      const Q8ActView v = act.view();
      for (Isa isa : available_isas()) {
        force_isa(isa);
        const KernelTable& k = active_kernels();
        const std::string what = std::string(isa_name(isa)) + (two ? " two planes" : " one plane") +
                                 " m=" + std::to_string(s.m) + " rows=" + std::to_string(s.rows) +
                                 " cols=" + std::to_string(s.cols) + " seed " + std::to_string(seed);
        // The existing kernels: the tile on slices of up to 16 rows, and each row alone.
        set_q4_prefill_gemm(false);
        std::vector<float> tiled(s.m * s.rows), alone(s.m * s.rows);
        for (std::size_t m0 = 0; m0 < s.m; m0 += 16)
          k.q4_matmul_groups(w, 0, w.groups(), row_slice(v, m0, std::min<std::size_t>(16, s.m - m0)),
                             tiled.data() + m0 * s.rows, s.rows);
        for (std::size_t i = 0; i < s.m; ++i)
          k.q4_matmul_groups(w, 0, w.groups(), row_slice(v, i, 1), alone.data() + i * s.rows, s.rows);
        set_q4_prefill_gemm(true);
        // The prefill GEMM on all rows, whole and on split group ranges, packed rows read
        // in place or pre-packed (serially and over the pool).
        for (int variant = 0; variant < 3; ++variant) {
          std::vector<float> y(s.m * s.rows, -777.0f);
          Q8ActView xs = v;
          if (k.prepack_act != nullptr && variant > 0) xs.tile_pack = k.prepack_act(v, variant == 2 ? &pool : nullptr);
          if (variant == 0) {
            k.q4_matmul_groups(w, 0, w.groups(), xs, y.data(), s.rows);
          } else {  // group 0 alone (no partner), then the rest
            k.q4_matmul_groups(w, 0, 1, xs, y.data(), s.rows);
            if (w.groups() > 1) k.q4_matmul_groups(w, 1, w.groups(), xs, y.data(), s.rows);
          }
          ASSERT_EQ(std::memcmp(y.data(), tiled.data(), y.size() * sizeof(float)), 0) << what << " vs the tile, variant " << variant;
          ASSERT_EQ(std::memcmp(y.data(), alone.data(), y.size() * sizeof(float)), 0) << what << " vs the GEMV, variant " << variant;
        }
        // Against float64, through the public entry point on the pool.
        std::vector<float> y(s.m * s.rows);
        q4_matmul(w, v, y.data(), s.rows, &pool);
        for (std::size_t i = 0; i < s.m; ++i)
          for (std::size_t n = 0; n < s.rows; ++n) {
            const auto ref = two ? testing::ref_q4_dot2(blocks.data() + n * nb, v.qs + i * s.cols, v.qs2 + i * s.cols,
                                                        v.d2 + i * nb, s.cols)
                                 : testing::ref_q4_dot(blocks.data() + n * nb, v.qs + i * s.cols, v.d + i * nb, s.cols);
            ASSERT_NEAR(y[i * s.rows + n], ref.value, testing::tolerance(ref, nb)) << what << " row " << i << " out " << n;
          }
      }
    }
  }
}

TEST(Q4Prefill, QuantizerAndTilePackingOverThePoolGiveTheSerialBytes) {
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  IsaGuard guard;
  ThreadPool pool(2);
  for (std::size_t m : {16, 17, 64, 100}) {
    const std::size_t cols = 1056, nb = cols / 32;
    const auto x = testing::random_activations(m, cols, rng);
    for (bool two : {false, true})
      for (Isa isa : available_isas()) {
        force_isa(isa);
        Q8ActBuffer serial, par;
        quantize_act(x.data(), m, cols, cols, serial, two);
        quantize_act(x.data(), m, cols, cols, par, two, &pool);
        const Q8ActView a = serial.view(), b = par.view();
        const std::string what = std::string(isa_name(isa)) + " m=" + std::to_string(m) + " seed " + std::to_string(seed);
        ASSERT_EQ(std::memcmp(a.qs, b.qs, m * cols), 0) << what;
        ASSERT_EQ(std::memcmp(a.d, b.d, m * nb * sizeof(float)), 0) << what;
        ASSERT_EQ(std::memcmp(a.bias, b.bias, m * nb * sizeof(std::int32_t)), 0) << what;
        if (two) {
          ASSERT_EQ(std::memcmp(a.qs2, b.qs2, m * cols), 0) << what;
          ASSERT_EQ(std::memcmp(a.d2, b.d2, m * nb * sizeof(float)), 0) << what;
          ASSERT_EQ(std::memcmp(a.bias2, b.bias2, m * nb * sizeof(std::int32_t)), 0) << what;
        }
        const KernelTable& k = active_kernels();
        if (k.prepack_act == nullptr) continue;
        // 640 bytes per row tile of 8 and block (q4_tile_vnni_impl.h TilePackBlock).
        const std::size_t bytes = (m + 7) / 8 * nb * 640;
        const auto* p1 = static_cast<const unsigned char*>(k.prepack_act(a, nullptr));
        if (p1 == nullptr) continue;  // a path that reads the rows in place at this count (AMX)
        const std::vector<unsigned char> first(p1, p1 + bytes);
        // Other rows of the same shape into the same (per-thread) buffer, then the first rows
        // again over the pool: it must rewrite every byte the serial pack wrote.
        Q8ActBuffer other;
        const auto y = testing::random_activations(m, cols, rng);
        quantize_act(y.data(), m, cols, cols, other, two);
        k.prepack_act(other.view(), nullptr);
        const auto* p2 = static_cast<const unsigned char*>(k.prepack_act(a, &pool));
        ASSERT_EQ(std::memcmp(first.data(), p2, bytes), 0) << what << " tile pack";
      }
  }
}

}  // namespace
}  // namespace ringlm::kernels
