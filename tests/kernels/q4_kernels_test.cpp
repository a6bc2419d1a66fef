// Every ISA path this build and CPU have, forced one at a time, against the scalar
// reference and a float64 evaluation, on random blocks with extreme scales.
#include <gtest/gtest.h>

#include <cstdlib>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/dispatch.h"
#include "kernels/kernel_table.h"
#include "kernels/q4_gemm.h"
#include "kernels/q4_packed.h"
#include "kernels/q8_act.h"
#include "test_support.h"
#include "util/error.h"

namespace ringlm::kernels {
namespace {

using testing::IsaGuard;

TEST(Dispatch, ParsesNamesAndRefusesUnavailablePaths) {
  EXPECT_EQ(parse_isa("avx512vnni"), Isa::avx512vnni);
  EXPECT_EQ(parse_isa("scalar"), Isa::scalar);
  EXPECT_EQ(parse_isa("neon-dotprod"), Isa::neon_dotprod);
  EXPECT_STREQ(isa_name(Isa::neon_dotprod), "neon-dotprod");
#if !defined(__aarch64__)
  EXPECT_FALSE(isa_available(Isa::neon_dotprod));
#else
  EXPECT_EQ(isa_available(Isa::neon_dotprod), cpu_features().neon_dotprod);
#endif
  EXPECT_THROW(parse_isa("sse9"), Error);
  EXPECT_TRUE(isa_available(Isa::scalar));
  EXPECT_EQ(parse_isa("amx"), Isa::amx);
#if defined(__x86_64__)
  // AMX needs the CPU's AMX-INT8, the tile state in XCR0, AVX-512 VNNI and the OS's grant.
  EXPECT_EQ(isa_available(Isa::amx), cpu_features().amx_int8 && cpu_features().avx512vnni && amx_os_ready());
#else
  EXPECT_FALSE(isa_available(Isa::amx));
#endif
  IsaGuard guard;
  if (!isa_available(Isa::amx)) EXPECT_THROW(force_isa(Isa::amx), Error);
  for (Isa isa : available_isas()) {
    force_isa(isa);
    EXPECT_EQ(active_isa(), isa);
  }
  std::printf("cpu: %s; paths tested: %zu\n", cpu_features().describe().c_str(), available_isas().size());
}

// Without RINGLM_ISA the process runs the widest path the CPU has: AMX on Sapphire Rapids
// and later Xeons (where the OS grants it), AVX-512 VNNI on Zen 4/5, AVX-512 BW on Skylake-X, AVX-VNNI on Alder Lake, AVX2, NEON dotprod.
TEST(Dispatch, DefaultIsTheWidestPathTheCpuHas) {
  const CpuFeatures& f = cpu_features();
  Isa want = Isa::scalar;
#if defined(__x86_64__)
  if (f.avx2) want = Isa::avx2;
  if (f.avxvnni) want = Isa::avxvnni;
  if (f.avx512) want = Isa::avx512;
  if (f.avx512vnni) want = Isa::avx512vnni;
  if (f.avx512vnni && f.amx_int8 && amx_os_ready()) want = Isa::amx;
#elif defined(__aarch64__)
  if (f.neon) want = Isa::neon;
  if (f.neon && f.neon_dotprod) want = Isa::neon_dotprod;
#endif
  EXPECT_EQ(best_isa(), want) << f.describe();
  const char* env = std::getenv("RINGLM_ISA");
  if (env == nullptr || *env == '\0') EXPECT_EQ(active_isa(), want) << f.describe();  // every test restores it
}

TEST(Q4Packed, PackUnpackRoundTripsIncludingPaddedGroups) {
  std::mt19937 rng(7);
  for (std::size_t rows : {1, 15, 16, 17, 45}) {
    const std::size_t cols = 96;
    auto blocks = testing::random_q4_blocks(rows, cols, rng);
    Q4PackedBuffer buf(rows, cols);
    q4_pack(blocks.data(), rows, cols, buf.data());
    const Q4Packed w = buf.view();
    EXPECT_EQ(w.bytes(), (rows + 15) / 16 * 16 * (cols / 32) * 18);
    std::vector<BlockQ4_0> back(cols / 32);
    for (std::size_t r = 0; r < rows; ++r) {
      q4_unpack_row(w, r, back.data());
      ASSERT_EQ(std::memcmp(back.data(), blocks.data() + r * (cols / 32), back.size() * sizeof(BlockQ4_0)), 0);
    }
    EXPECT_THROW(q4_unpack_row(w, rows, back.data()), Error);
  }
  EXPECT_THROW(q4_packed_bytes(4, 48), Error);
  EXPECT_THROW(q4_packed_bytes(0, 64), Error);
}

TEST(Q8Act, EveryPathIsBitIdenticalToTheReference) {
  std::mt19937 rng(11);
  const std::size_t rows = 3, cols = 32 * 40;
  const auto x = testing::random_activations(rows, cols, rng);
  std::vector<std::int8_t> qs(rows * cols);
  std::vector<float> d(rows * cols / 32);
  std::vector<std::int32_t> bias(rows * cols / 32);
  for (std::size_t m = 0; m < rows; ++m)
    quantize_act_row_ref(x.data() + m * cols, cols, qs.data() + m * cols, d.data() + m * cols / 32,
                         bias.data() + m * cols / 32);
  // The reference itself: codes within [-127, 127], dequantized within half a step.
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_LE(std::abs(int(qs[i])), 127);
    ASSERT_LE(std::fabs(double(qs[i]) * d[i / 32] - x[i]), 0.5000001 * d[i / 32] + 1e-45);
  }
  IsaGuard guard;
  for (Isa isa : available_isas()) {
    force_isa(isa);
    Q8ActBuffer act;
    quantize_act(x.data(), rows, cols, cols, act);
    const Q8ActView v = act.view();
    ASSERT_EQ(std::memcmp(v.qs, qs.data(), qs.size()), 0) << isa_name(isa);
    ASSERT_EQ(std::memcmp(v.d, d.data(), d.size() * 4), 0) << isa_name(isa);
    ASSERT_EQ(std::memcmp(v.bias, bias.data(), bias.size() * 4), 0) << isa_name(isa);
  }
}

// q4_matmul on each path vs float64; shapes cover padded groups, 1..17 activation rows
// (GEMV, full tiles of 4 or 8 rows and every remainder) and a strided output.
TEST(Q4Matmul, EveryPathMatchesFloat64OnExtremeBlocks) {
  std::mt19937 rng(2024);
  IsaGuard guard;
  ThreadPool pool(3);
  struct Shape { std::size_t rows, cols, m; };
  for (Shape s : {Shape{16, 32, 1}, Shape{37, 96, 1}, Shape{33, 256, 5}, Shape{64, 160, 9}, Shape{5, 64, 4},
                  Shape{48, 384, 2}, Shape{20, 2560, 6} /* 80 blocks: K split in chunks */, Shape{24, 128, 15},
                  Shape{17, 2080, 17}, Shape{16, 64, 7}, Shape{16, 64, 3}}) {
    const auto blocks = testing::random_q4_blocks(s.rows, s.cols, rng);
    Q4PackedBuffer wbuf(s.rows, s.cols);
    q4_pack(blocks.data(), s.rows, s.cols, wbuf.data());
    const auto x = testing::random_activations(s.m, s.cols, rng);
    const std::size_t ldy = s.rows + 3;
    for (Isa isa : available_isas()) {
      force_isa(isa);
      Q8ActBuffer act;
      quantize_act(x.data(), s.m, s.cols, s.cols, act);
      const Q8ActView v = act.view();
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> y(s.m * ldy, -12345.0f);
        q4_matmul(wbuf.view(), v, y.data(), ldy, p);
        for (std::size_t m = 0; m < s.m; ++m) {
          for (std::size_t n = 0; n < s.rows; ++n) {
            const auto ref = testing::ref_q4_dot(blocks.data() + n * (s.cols / 32), v.qs + m * s.cols,
                                                 v.d + m * (s.cols / 32), s.cols);
            ASSERT_NEAR(y[m * ldy + n], ref.value, testing::tolerance(ref, s.cols / 32))
                << isa_name(isa) << " shape " << s.rows << "x" << s.cols << " m=" << m << " n=" << n;
          }
          for (std::size_t n = s.rows; n < ldy; ++n) ASSERT_EQ(y[m * ldy + n], -12345.0f) << "wrote past the row";
        }
      }
    }
  }
}

TEST(Q8Act, TwoPlanesAreBitIdenticalOnEveryPathAndRepresentXTo15Bits) {
  std::mt19937 rng(12);
  const std::size_t rows = 2, cols = 32 * 30;
  const auto x = testing::random_activations(rows, cols, rng);
  std::vector<std::int8_t> qs(rows * cols), qs2(rows * cols);
  std::vector<float> d(rows * cols / 32), d2(d.size());
  std::vector<std::int32_t> bias(d.size()), bias2(d.size());
  for (std::size_t m = 0; m < rows; ++m) {
    const std::size_t o = m * cols, ob = m * cols / 32;
    quantize_act_row_ref(x.data() + o, cols, qs.data() + o, d.data() + ob, bias.data() + ob, qs2.data() + o,
                         d2.data() + ob, bias2.data() + ob);
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_LE(std::abs(int(qs2[i])), 127);
    const double v = double(d2[i / 32]) * (254.0 * qs[i] + qs2[i]);
    ASSERT_LE(std::fabs(v - x[i]), 0.5000001 * d2[i / 32] + 1e-6 * std::fabs(x[i]) + 1e-45) << i;
  }
  IsaGuard guard;
  for (Isa isa : available_isas()) {
    force_isa(isa);
    Q8ActBuffer act;
    quantize_act(x.data(), rows, cols, cols, act, /*two_planes=*/true);
    const Q8ActView v = act.view();
    ASSERT_NE(v.qs2, nullptr);
    ASSERT_EQ(std::memcmp(v.qs, qs.data(), qs.size()), 0) << isa_name(isa);
    ASSERT_EQ(std::memcmp(v.qs2, qs2.data(), qs2.size()), 0) << isa_name(isa);
    ASSERT_EQ(std::memcmp(v.d2, d2.data(), d2.size() * 4), 0) << isa_name(isa);
    ASSERT_EQ(std::memcmp(v.bias2, bias2.data(), bias2.size() * 4), 0) << isa_name(isa);
    quantize_act(x.data(), rows, cols, cols, act);  // back to one plane
    EXPECT_EQ(act.view().qs2, nullptr);
  }
}

TEST(Q4Matmul, TwoPlaneActivationsMatchFloat64OnEveryPath) {
  std::mt19937 rng(4242);
  IsaGuard guard;
  ThreadPool pool(2);
  struct Shape { std::size_t rows, cols, m; };
  for (Shape s : {Shape{37, 96, 1}, Shape{33, 256, 5}, Shape{20, 2560, 6}, Shape{18, 2080, 17}, Shape{16, 64, 11}}) {
    const auto blocks = testing::random_q4_blocks(s.rows, s.cols, rng);
    Q4PackedBuffer wbuf(s.rows, s.cols);
    q4_pack(blocks.data(), s.rows, s.cols, wbuf.data());
    const auto x = testing::random_activations(s.m, s.cols, rng);
    for (Isa isa : available_isas()) {
      force_isa(isa);
      Q8ActBuffer act;
      quantize_act(x.data(), s.m, s.cols, s.cols, act, true);
      const Q8ActView v = act.view();
      std::vector<float> y(s.m * s.rows);
      q4_matmul(wbuf.view(), v, y.data(), s.rows, &pool);
      for (std::size_t m = 0; m < s.m; ++m)
        for (std::size_t n = 0; n < s.rows; ++n) {
          const std::size_t nb = s.cols / 32;
          const auto ref = testing::ref_q4_dot2(blocks.data() + n * nb, v.qs + m * s.cols, v.qs2 + m * s.cols,
                                                v.d2 + m * nb, s.cols);
          ASSERT_NEAR(y[m * s.rows + n], ref.value, testing::tolerance(ref, nb))
              << isa_name(isa) << " shape " << s.rows << "x" << s.cols << " m=" << m << " n=" << n;
        }
    }
  }
}

// The point of the second plane: w4 x two-plane activations track w4 x f32 ~100x closer
// than single-plane int8.
TEST(Q4Matmul, TwoPlanesCutTheActivationErrorByOver50x) {
  std::mt19937 rng(6);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const std::size_t rows = 64, cols = 1536;
  std::vector<float> wf(rows * cols), x(cols);
  for (auto& v : wf) v = 0.05f * n(rng);
  for (auto& v : x) v = n(rng);
  std::vector<BlockQ4_0> blocks(rows * cols / 32);
  for (std::size_t r = 0; r < rows; ++r) quantize_row_q4_0_ref(wf.data() + r * cols, blocks.data() + r * cols / 32, cols);
  Q4PackedBuffer wbuf(rows, cols);
  q4_pack(blocks.data(), rows, cols, wbuf.data());
  std::vector<double> ref(rows);
  std::vector<float> wrow(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    dequantize_row_q4_0(blocks.data() + r * cols / 32, wrow.data(), cols);
    for (std::size_t k = 0; k < cols; ++k) ref[r] += double(wrow[k]) * x[k];
  }
  double err1 = 0, err2 = 0;
  for (bool two : {false, true}) {
    Q8ActBuffer act;
    quantize_act(x.data(), 1, cols, cols, act, two);
    std::vector<float> y(rows);
    q4_matmul(wbuf.view(), act.view(), y.data(), rows, nullptr);
    double e = 0;
    for (std::size_t r = 0; r < rows; ++r) e += (y[r] - ref[r]) * (y[r] - ref[r]);
    (two ? err2 : err1) = std::sqrt(e);
  }
  EXPECT_GT(err1, 50.0 * err2) << "one plane " << err1 << ", two planes " << err2;
}

// A path may compute one activation row (decode) with another loop than a tile of rows
// (prefill, the batched forward), but every row's result must be the same bits: the
// batched and single-token forward passes agree exactly only if this holds. Shapes cover
// an odd group count (the decode GEMV pairs groups), a padded last group and K chunking.
TEST(Q4Matmul, OneRowIsBitIdenticalToThatRowOfATile) {
  std::mt19937 rng(99);
  IsaGuard guard;
  ThreadPool pool(2);
  struct Shape { std::size_t rows, cols, m; };
  for (Shape s : {Shape{37, 96, 3}, Shape{80, 2560, 9}, Shape{48, 1536, 17}, Shape{16, 64, 2}}) {
    const auto blocks = testing::random_q4_blocks(s.rows, s.cols, rng);
    Q4PackedBuffer wbuf(s.rows, s.cols);
    q4_pack(blocks.data(), s.rows, s.cols, wbuf.data());
    const auto x = testing::random_activations(s.m, s.cols, rng);
    for (Isa isa : available_isas()) {
      force_isa(isa);
      for (bool two : {false, true}) {
        Q8ActBuffer all, one;
        quantize_act(x.data(), s.m, s.cols, s.cols, all, two);
        std::vector<float> y_all(s.m * s.rows), y_one(s.rows);
        q4_matmul(wbuf.view(), all.view(), y_all.data(), s.rows, &pool);
        for (std::size_t m = 0; m < s.m; ++m) {
          quantize_act(x.data() + m * s.cols, 1, s.cols, s.cols, one, two);
          q4_matmul(wbuf.view(), one.view(), y_one.data(), s.rows, m % 2 ? &pool : nullptr);
          ASSERT_EQ(std::memcmp(y_one.data(), y_all.data() + m * s.rows, s.rows * sizeof(float)), 0)
              << isa_name(isa) << (two ? " two planes" : " one plane") << " shape " << s.rows << "x" << s.cols
              << " row " << m;
        }
      }
    }
  }
}

// The batched decode step's shapes (2..16 rows: the VNNI tile, the AMX tiles, the 16-row
// tile shifted back over the last rows above 16) on fresh random inputs: every path against
// the scalar reference kernel (both within float64's tolerance of the true value), one and
// two planes, and every row bit-identical to that row computed alone (the GEMV).
TEST(Q4Matmul, BatchRowsMatchTheScalarKernelAndTheirRowAlone) {
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  IsaGuard guard;
  ThreadPool pool(2);
  const std::size_t rows = 40, cols = 2080, nb = cols / 32;  // 3 groups (one unpaired), 65 blocks
  const auto blocks = testing::random_q4_blocks(rows, cols, rng);
  Q4PackedBuffer wbuf(rows, cols);
  q4_pack(blocks.data(), rows, cols, wbuf.data());
  for (std::size_t m : {2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 20, 33}) {
    const auto x = testing::random_activations(m, cols, rng);
    for (bool two : {false, true}) {
      force_isa(Isa::scalar);
      Q8ActBuffer act;
      quantize_act(x.data(), m, cols, cols, act, two);
      const Q8ActView v = act.view();
      std::vector<float> ref_y(m * rows);
      q4_matmul(wbuf.view(), v, ref_y.data(), rows, nullptr);
      for (Isa isa : available_isas()) {
        force_isa(isa);
        std::vector<float> y(m * rows, -12345.0f), one(rows);
        q4_matmul(wbuf.view(), v, y.data(), rows, m % 2 ? &pool : nullptr);
        Q8ActBuffer row;
        for (std::size_t i = 0; i < m; ++i) {
          for (std::size_t n = 0; n < rows; ++n) {
            const auto ref = two ? testing::ref_q4_dot2(blocks.data() + n * nb, v.qs + i * cols, v.qs2 + i * cols,
                                                        v.d2 + i * nb, cols)
                                 : testing::ref_q4_dot(blocks.data() + n * nb, v.qs + i * cols, v.d + i * nb, cols);
            ASSERT_NEAR(y[i * rows + n], ref_y[i * rows + n], 2 * testing::tolerance(ref, nb))
                << isa_name(isa) << (two ? " two planes" : " one plane") << " m=" << m << " row " << i << " n=" << n
                << " seed " << seed;
          }
          quantize_act(x.data() + i * cols, 1, cols, cols, row, two);
          q4_matmul(wbuf.view(), row.view(), one.data(), rows, nullptr);
          ASSERT_EQ(std::memcmp(one.data(), y.data() + i * rows, rows * sizeof(float)), 0)
              << isa_name(isa) << (two ? " two planes" : " one plane") << " m=" << m << " row " << i << " seed " << seed;
        }
      }
    }
  }
}

// Small buffers come from operator new, large ones from their own huge-page-advised mapping;
// both must be zeroed (padding rows compute to 0), 64-byte aligned and survive moves.
TEST(Q4PackedBuffer, ZeroedAlignedAndMovableSmallAndLarge) {
  for (const std::size_t rows : {std::size_t{16}, std::size_t{4096}}) {
    Q4PackedBuffer a(rows, 1536);
    ASSERT_EQ(a.bytes(), q4_packed_bytes(rows, 1536));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 64, 0u);
    for (std::size_t i = 0; i < a.bytes(); i += 997) ASSERT_EQ(a.data()[i], 0) << i;
    ASSERT_EQ(a.data()[a.bytes() - 1], 0);
#if defined(__linux__)
    EXPECT_EQ(a.huge_page_advised(), a.bytes() >= (std::size_t{2} << 20));
    if (a.huge_page_advised()) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % (std::size_t{2} << 20), 0u);
#endif
    a.data()[a.bytes() - 1] = 7;
    std::uint8_t* p = a.data();
    Q4PackedBuffer b(std::move(a));
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(b.view().rows, rows);
    EXPECT_EQ(b.data()[b.bytes() - 1], 7);
    EXPECT_EQ(a.data(), nullptr);
    Q4PackedBuffer c = Q4PackedBuffer::raw(100);
    c = std::move(b);
    EXPECT_EQ(c.data(), p);
  }
}

TEST(Q4Matmul, RejectsMismatchedShapes) {
  Q4PackedBuffer wbuf(16, 64);
  Q8ActBuffer act;
  std::vector<float> x(96, 1.0f), y(32);
  quantize_act(x.data(), 1, 96, 96, act);
  EXPECT_THROW(q4_matmul(wbuf.view(), act.view(), y.data(), 16, nullptr), Error);
  quantize_act(x.data(), 1, 64, 64, act);
  EXPECT_THROW(q4_matmul(wbuf.view(), act.view(), y.data(), 8, nullptr), Error);
  EXPECT_THROW(act.resize(1, 40), Error);
  EXPECT_THROW(quantize_act(x.data(), 1, 64, 32, act), Error);
}

// w4a8 against w4 x f32 on Gaussian data: the activation rounding alone must keep the
// outputs close (the numerics the model relies on).
TEST(Q4Matmul, ActivationRoundingKeepsCosineAbove0999) {
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const std::size_t rows = 64, cols = 1536;
  std::vector<float> wf(rows * cols), x(cols);
  for (auto& v : wf) v = 0.05f * n(rng);
  for (auto& v : x) v = n(rng);
  std::vector<BlockQ4_0> blocks(rows * cols / 32);
  for (std::size_t r = 0; r < rows; ++r) quantize_row_q4_0_ref(wf.data() + r * cols, blocks.data() + r * cols / 32, cols);
  Q4PackedBuffer wbuf(rows, cols);
  q4_pack(blocks.data(), rows, cols, wbuf.data());
  Q8ActBuffer act;
  quantize_act(x.data(), 1, cols, cols, act);
  std::vector<float> y(rows), wrow(cols);
  q4_matmul(wbuf.view(), act.view(), y.data(), rows, nullptr);
  double dot = 0, n1 = 0, n2 = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    dequantize_row_q4_0(blocks.data() + r * cols / 32, wrow.data(), cols);
    double ref = 0;
    for (std::size_t k = 0; k < cols; ++k) ref += double(wrow[k]) * x[k];
    dot += ref * y[r];
    n1 += ref * ref;
    n2 += double(y[r]) * y[r];
  }
  EXPECT_GT(dot / std::sqrt(n1 * n2), 0.999);
}

TEST(I8Gemv, EveryPathMatchesFloat64) {
  std::mt19937 rng(77);
  std::uniform_int_distribution<int> code(-127, 127);
  std::normal_distribution<float> n(0.0f, 1.0f);
  IsaGuard guard;
  ThreadPool pool(2);
  for (std::size_t cols : {64, 96, 1536}) {
    const std::size_t rows = 203;
    std::vector<std::int8_t> w(rows * cols);
    for (auto& v : w) v = static_cast<std::int8_t>(code(rng));
    for (std::size_t k = 0; k < cols; ++k) w[5 * cols + k] = -127;  // extreme row
    std::vector<float> scale(rows);
    for (auto& s : scale) s = std::fabs(n(rng)) * 0.01f;
    scale[7] = 0.0f;
    const auto x = testing::random_activations(1, cols, rng);
    for (Isa isa : available_isas()) {
      force_isa(isa);
      Q8ActBuffer act;
      quantize_act(x.data(), 1, cols, cols, act);
      const Q8ActView v = act.view();
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> yf(rows), yq(rows);
        i8_gemv_f32(w.data(), scale.data(), rows, cols, x.data(), yf.data(), p);
        i8_gemv_q8(w.data(), scale.data(), rows, cols, v, yq.data(), p);
        for (std::size_t r = 0; r < rows; ++r) {
          double ef = 0, mf = 0, eq = 0, mq = 0;
          for (std::size_t k = 0; k < cols; ++k) {
            ef += double(w[r * cols + k]) * x[k];
            mf += std::fabs(double(w[r * cols + k]) * x[k]);
            const double tq = double(w[r * cols + k]) * v.qs[k] * v.d[k / 32];
            eq += tq;
            mq += std::fabs(tq);
          }
          ASSERT_NEAR(yf[r], scale[r] * ef, 1e-6 * scale[r] * mf * (1 + cols / 64.0) + 1e-30)
              << isa_name(isa) << " f32 row " << r;
          ASSERT_NEAR(yq[r], scale[r] * eq, 1e-6 * scale[r] * mq * (1 + cols / 64.0) + 1e-30)
              << isa_name(isa) << " q8 row " << r;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ringlm::kernels
