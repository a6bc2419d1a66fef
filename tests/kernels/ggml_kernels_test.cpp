// The ggml-block kernels (ggml_quant_gemm.h: Q8_0, Q4_K, Q5_K, Q6_K x int8 activations) on
// every ISA path this build and CPU have, forced one at a time, against a float64
// evaluation of the scalar-dequantized weights times the q8-rounded activations. The
// weights are random blocks whose fp16 scales include 0, the smallest subnormal, +-65504 and
// whose codes include all-minimum / all-maximum blocks; activations include zero, tiny, huge
// and single-spike blocks (test_support.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "util/dtype.h"
#include "kernels/dequant_ggml.h"
#include "kernels/dispatch.h"
#include "kernels/ggml_quant_gemm.h"
#include "kernels/ggml_weight_matmul.h"
#include "kernels/q4_formats.h"
#include "kernels/iq4xs_packed.h"
#include "kernels/q3k_packed.h"
#include "kernels/q5k_packed.h"
#include "kernels/q4k_packed.h"
#include "kernels/q6k_packed.h"
#include "kernels/q8p16_packed.h"
#include "kernels/q4_weight_matmul.h"
#include "kernels/q8_act.h"
#include "kernels/ref_matmul.h"
#include "ggml_test_support.h"
#include "test_support.h"
#include "util/error.h"

namespace ringlm::kernels {
namespace {

using testing::IsaGuard;
using testing::decode;
using testing::Elem;
using testing::random_blocks;

io::DType dtype_of(GgmlQuant t) {
  switch (t) {
    case GgmlQuant::q8_0: return io::DType::Q8_0;
    case GgmlQuant::q4_k: return io::DType::Q4_K;
    case GgmlQuant::q5_k: return io::DType::Q5_K;
    case GgmlQuant::q6_k: return io::DType::Q6_K;
    case GgmlQuant::iq4_xs: return io::DType::IQ4_XS;
    case GgmlQuant::q3_k: return io::DType::Q3_K;
  }
  return io::DType::F32;
}

struct Case {
  GgmlQuant type;
  std::size_t rows, cols, tokens;
};

TEST(GgmlKernels, IndependentDecoderMatchesTheScalarDequantizer) {
  std::mt19937 rng(5);
  for (GgmlQuant type : {GgmlQuant::q8_0, GgmlQuant::q4_k, GgmlQuant::q5_k, GgmlQuant::q6_k, GgmlQuant::iq4_xs,
                         GgmlQuant::q3_k}) {
    const std::size_t rows = 3, cols = 1024;
    const auto w = random_blocks(type, rows, cols, rng);
    std::vector<float> deq(cols);
    const GgmlQuantMatrix m{type, w.data(), rows, cols};
    for (std::size_t r = 0; r < rows; ++r) {
      dequantize_row(dtype_of(type), w.data() + r * m.row_bytes(), deq.data(), static_cast<std::int64_t>(cols));
      for (std::size_t i = 0; i < cols; ++i) {
        const Elem e = decode(type, w.data() + r * m.row_bytes(), i);
        const double v = e.scale * e.code - e.min;
        ASSERT_LE(std::fabs(v - deq[i]), 2.4e-7 * (std::fabs(e.scale * e.code) + std::fabs(e.min)) + 1e-45)
            << ggml_quant_name(type) << " row " << r << " elem " << i;
      }
    }
  }
}

TEST(GgmlKernels, EveryPathMatchesFloat64OnExtremeBlocks) {
  std::mt19937 rng(17);
  ThreadPool pool(2);
  IsaGuard guard;
  const Case cases[] = {
      {GgmlQuant::q8_0, 37, 96, 1}, {GgmlQuant::q8_0, 20, 512, 5},  {GgmlQuant::q4_k, 37, 256, 1},
      {GgmlQuant::q4_k, 19, 1024, 5}, {GgmlQuant::q5_k, 37, 256, 1}, {GgmlQuant::q5_k, 19, 768, 4},
      {GgmlQuant::q6_k, 37, 256, 1},  {GgmlQuant::q6_k, 19, 1024, 5},
  };
  for (const Case& c : cases) {
    const auto w = random_blocks(c.type, c.rows, c.cols, rng);
    const GgmlQuantMatrix m{c.type, w.data(), c.rows, c.cols};
    const auto x = testing::random_activations(c.tokens, c.cols, rng);
    for (bool two_planes : {false, true}) {
      Q8ActBuffer act;
      force_isa(Isa::scalar);
      quantize_act(x.data(), c.tokens, c.cols, c.cols, act, two_planes);
      const Q8ActView xv = act.view();
      // float64: scalar-dequantized weights . q8-rounded activations.
      std::vector<testing::GgmlRef> want(c.tokens * c.rows);
      for (std::size_t t = 0; t < c.tokens; ++t)
        for (std::size_t r = 0; r < c.rows; ++r)
          want[t * c.rows + r] = testing::ref_ggml_dot(c.type, w.data() + r * m.row_bytes(), xv, t);
      for (Isa isa : available_isas()) {
        force_isa(isa);
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
          const std::size_t ldy = c.rows + 3;
          std::vector<float> y(c.tokens * ldy, -7.0f);
          ggml_quant_matmul(m, xv, y.data(), ldy, p);
          for (std::size_t t = 0; t < c.tokens; ++t)
            for (std::size_t r = 0; r < c.rows; ++r) {
              const testing::GgmlRef& ref = want[t * c.rows + r];
              ASSERT_LE(std::fabs(y[t * ldy + r] - ref.value), testing::ggml_tolerance(ref, c.cols))
                  << ggml_quant_name(c.type) << " " << isa_name(isa) << (two_planes ? " two planes" : "")
                  << " token " << t << " row " << r << " got " << y[t * ldy + r] << " want " << ref.value;
            }
          for (std::size_t t = 0; t < c.tokens; ++t)  // padding columns untouched
            for (std::size_t r = c.rows; r < ldy; ++r) ASSERT_EQ(y[t * ldy + r], -7.0f);
        }
      }
    }
  }
}

// The repacked layouts (q4k_packed.h, q6k_packed.h, q8p16_packed.h), tested the same way.
struct Q4KLayout {
  using Block = BlockQ4_K;
  using Packed = Q4KPacked;
  static constexpr GgmlQuant kType = GgmlQuant::q4_k;
  static constexpr std::size_t kRowBytes = 148;
  static std::size_t bytes(std::size_t r, std::size_t c) { return q4k_packed_bytes(r, c); }
  static void pack(const Block* b, std::size_t row, std::size_t r, std::size_t c, std::uint8_t* d) {
    q4k_pack_row(b, row, r, c, d);
  }
  static void unpack(const Packed& w, std::size_t row, Block* out) { q4k_unpack_row(w, row, out); }
  static void matmul(const Packed& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* p) {
    q4k_matmul(w, x, y, ldy, p);
  }
};
struct Q6KLayout {
  using Block = BlockQ6_K;
  using Packed = Q6KPacked;
  static constexpr GgmlQuant kType = GgmlQuant::q6_k;
  static constexpr std::size_t kRowBytes = 210;
  static std::size_t bytes(std::size_t r, std::size_t c) { return q6k_packed_bytes(r, c); }
  static void pack(const Block* b, std::size_t row, std::size_t r, std::size_t c, std::uint8_t* d) {
    q6k_pack_row(b, row, r, c, d);
  }
  static void unpack(const Packed& w, std::size_t row, Block* out) { q6k_unpack_row(w, row, out); }
  static void matmul(const Packed& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* p) {
    q6k_matmul(w, x, y, ldy, p);
  }
};

struct Q8Layout {
  using Block = BlockQ8_0;
  using Packed = Q8P16Packed;
  static constexpr GgmlQuant kType = GgmlQuant::q8_0;
  static constexpr std::size_t kRowBytes = 8 * 34;  // per 256 values
  static std::size_t bytes(std::size_t r, std::size_t c) { return q8p16_packed_bytes(r, c); }
  static void pack(const Block* b, std::size_t row, std::size_t r, std::size_t c, std::uint8_t* d) {
    q8p16_pack_row(b, row, r, c, d);
  }
  static void unpack(const Packed& w, std::size_t row, Block* out) { q8p16_unpack_row(w, row, out); }
  static void matmul(const Packed& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* p) {
    q8p16_matmul(w, x, y, ldy, p);
  }
};

struct Iq4XsLayout {
  using Block = BlockIQ4_XS;
  using Packed = Iq4XsPacked;
  static constexpr GgmlQuant kType = GgmlQuant::iq4_xs;
  static constexpr std::size_t kRowBytes = 138;
  static std::size_t bytes(std::size_t r, std::size_t c) { return iq4xs_packed_bytes(r, c); }
  static void pack(const Block* b, std::size_t row, std::size_t r, std::size_t c, std::uint8_t* d) {
    iq4xs_pack_row(b, row, r, c, d);
  }
  static void unpack(const Packed& w, std::size_t row, Block* out) { iq4xs_unpack_row(w, row, out); }
  static void matmul(const Packed& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* p) {
    iq4xs_matmul(w, x, y, ldy, p);
  }
};

struct Q3KLayout {
  using Block = BlockQ3_K;
  using Packed = Q3KPacked;
  static constexpr GgmlQuant kType = GgmlQuant::q3_k;
  static constexpr std::size_t kRowBytes = 114;
  static std::size_t bytes(std::size_t r, std::size_t c) { return q3k_packed_bytes(r, c); }
  static void pack(const Block* b, std::size_t row, std::size_t r, std::size_t c, std::uint8_t* d) {
    q3k_pack_row(b, row, r, c, d);
  }
  static void unpack(const Packed& w, std::size_t row, Block* out) { q3k_unpack_row(w, row, out); }
  static void matmul(const Packed& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* p) {
    q3k_matmul(w, x, y, ldy, p);
  }
};

struct Q5KLayout {
  using Block = BlockQ5_K;
  using Packed = Q5KPacked;
  static constexpr GgmlQuant kType = GgmlQuant::q5_k;
  static constexpr std::size_t kRowBytes = 180;
  static std::size_t bytes(std::size_t r, std::size_t c) { return q5k_packed_bytes(r, c); }
  static void pack(const Block* b, std::size_t row, std::size_t r, std::size_t c, std::uint8_t* d) {
    q5k_pack_row(b, row, r, c, d);
  }
  static void unpack(const Packed& w, std::size_t row, Block* out) { q5k_unpack_row(w, row, out); }
  static void matmul(const Packed& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* p) {
    q5k_matmul(w, x, y, ldy, p);
  }
};

// Bytes of one row of `cols` values of the layout's ggml blocks.
template <class L>
std::size_t block_row_bytes(std::size_t cols) {
  return cols / ggml_quant_block_elems(L::kType) * sizeof(typename L::Block);
}

template <class L>
void check_round_trip() {
  std::mt19937 rng(29);
  for (std::size_t rows : {1, 15, 16, 17, 45})
    for (std::size_t cols : {256, 768}) {
      const auto blocks = random_blocks(L::kType, rows, cols, rng);
      const std::size_t rb = block_row_bytes<L>(cols);
      const std::size_t bytes = L::bytes(rows, cols);
      EXPECT_EQ(bytes, (rows + 15) / 16 * 16 * (cols / 256) * L::kRowBytes);
      std::vector<std::uint8_t> packed(bytes, 0);
      for (std::size_t r = rows; r-- > 0;)  // any order
        L::pack(reinterpret_cast<const typename L::Block*>(blocks.data() + r * rb), r, rows, cols, packed.data());
      const typename L::Packed w{packed.data(), rows, cols};
      std::vector<typename L::Block> back(cols / ggml_quant_block_elems(L::kType));
      for (std::size_t r = 0; r < rows; ++r) {
        L::unpack(w, r, back.data());
        ASSERT_EQ(std::memcmp(back.data(), blocks.data() + r * rb, rb), 0)
            << ggml_quant_name(L::kType) << " " << rows << "x" << cols << " row " << r;
      }
      EXPECT_THROW(L::unpack(w, rows, back.data()), Error);
    }
  EXPECT_THROW(L::bytes(4, 16), Error);
  EXPECT_THROW(L::bytes(0, 256), Error);
}

template <class L>
void check_every_path() {
  std::mt19937 rng(31);
  ThreadPool pool(2);
  IsaGuard guard;
  struct Shape {
    std::size_t rows, cols, tokens;
  };
  // 2560 columns = 10 super-blocks: more than one K chunk when tokens > 4.
  for (Shape sh : {Shape{37, 256, 1}, Shape{16, 512, 3}, Shape{33, 2560, 6}, Shape{7, 1024, 9}}) {
    const auto blocks = random_blocks(L::kType, sh.rows, sh.cols, rng);
    const std::size_t rb = block_row_bytes<L>(sh.cols);
    std::vector<std::uint8_t> packed(L::bytes(sh.rows, sh.cols), 0);
    for (std::size_t r = 0; r < sh.rows; ++r)
      L::pack(reinterpret_cast<const typename L::Block*>(blocks.data() + r * rb), r, sh.rows, sh.cols, packed.data());
    const typename L::Packed w{packed.data(), sh.rows, sh.cols};
    const auto x = testing::random_activations(sh.tokens, sh.cols, rng);
    for (bool two_planes : {false, true}) {
      Q8ActBuffer act;
      force_isa(Isa::scalar);
      quantize_act(x.data(), sh.tokens, sh.cols, sh.cols, act, two_planes);
      const Q8ActView xv = act.view();
      for (Isa isa : available_isas()) {
        force_isa(isa);
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
          const std::size_t ldy = sh.rows + 2;
          std::vector<float> y(sh.tokens * ldy, -7.0f);
          L::matmul(w, xv, y.data(), ldy, p);
          for (std::size_t t = 0; t < sh.tokens; ++t) {
            for (std::size_t r = 0; r < sh.rows; ++r) {
              const auto ref = testing::ref_ggml_dot(L::kType, blocks.data() + r * rb, xv, t);
              ASSERT_LE(std::fabs(y[t * ldy + r] - ref.value), testing::ggml_tolerance(ref, sh.cols))
                  << ggml_quant_name(L::kType) << " " << isa_name(isa) << (two_planes ? " two planes" : "") << " "
                  << sh.rows << "x" << sh.cols << " token " << t << " row " << r << " got " << y[t * ldy + r]
                  << " want " << ref.value;
            }
            for (std::size_t r = sh.rows; r < ldy; ++r) ASSERT_EQ(y[t * ldy + r], -7.0f);
          }
        }
      }
    }
  }
}

TEST(Q4KPacked, PackUnpackRoundTripsIncludingPaddedGroups) { check_round_trip<Q4KLayout>(); }
TEST(Q4KPacked, EveryPathMatchesFloat64OnExtremeBlocks) { check_every_path<Q4KLayout>(); }
TEST(Q6KPacked, PackUnpackRoundTripsIncludingPaddedGroups) { check_round_trip<Q6KLayout>(); }
TEST(Q6KPacked, EveryPathMatchesFloat64OnExtremeBlocks) { check_every_path<Q6KLayout>(); }
TEST(Q8P16Packed, PackUnpackRoundTripsIncludingPaddedGroups) { check_round_trip<Q8Layout>(); }
TEST(Q8P16Packed, EveryPathMatchesFloat64OnExtremeBlocks) { check_every_path<Q8Layout>(); }

TEST(Iq4XsPacked, PackUnpackRoundTripsIncludingPaddedGroups) { check_round_trip<Iq4XsLayout>(); }
TEST(Iq4XsPacked, EveryPathMatchesFloat64OnExtremeBlocks) { check_every_path<Iq4XsLayout>(); }

TEST(Q3KPacked, PackUnpackRoundTripsIncludingPaddedGroups) { check_round_trip<Q3KLayout>(); }
TEST(Q3KPacked, EveryPathMatchesFloat64OnExtremeBlocks) { check_every_path<Q3KLayout>(); }

TEST(Q5KPacked, PackUnpackRoundTripsIncludingPaddedGroups) { check_round_trip<Q5KLayout>(); }
TEST(Q5KPacked, EveryPathMatchesFloat64OnExtremeBlocks) { check_every_path<Q5KLayout>(); }

TEST(GgmlKernels, RefusesBadShapes) {
  std::vector<std::uint8_t> w(210 * 4);
  Q8ActBuffer act;
  std::vector<float> x(512, 1.0f), y(8);
  quantize_act(x.data(), 1, 512, 512, act);
  EXPECT_THROW(ggml_quant_matmul({GgmlQuant::q6_k, w.data(), 2, 384}, act.view(), y.data(), 2, nullptr), Error);
  EXPECT_THROW(ggml_quant_matmul({GgmlQuant::q6_k, w.data(), 2, 256}, act.view(), y.data(), 2, nullptr), Error);
  EXPECT_THROW(ggml_quant_matmul({GgmlQuant::q6_k, w.data(), 2, 512}, act.view(), y.data(), 1, nullptr), Error);
  EXPECT_NO_THROW(ggml_quant_matmul({GgmlQuant::q6_k, w.data(), 2, 512}, act.view(), y.data(), 2, nullptr));
  // IQ4_XS and Q3_K run only repacked: the plain-block entry refuses them by name.
  std::vector<std::uint8_t> iq(136 * 4);
  EXPECT_THROW(ggml_quant_matmul({GgmlQuant::iq4_xs, iq.data(), 2, 512}, act.view(), y.data(), 2, nullptr), Error);
  EXPECT_THROW(ggml_quant_matmul({GgmlQuant::q3_k, iq.data(), 2, 512}, act.view(), y.data(), 2, nullptr), Error);
}

// matmul() sends GGUF block matrices to these kernels unless the activation mode is f32,
// where it keeps the scalar dequantizer (bit-identical to a float32 copy of the weights).
TEST(GgmlKernels, MatmulRoutesBlockMatricesByActivationMode) {
  std::mt19937 rng(23);
  const std::size_t rows = 24, cols = 512, tokens = 3;
  const auto w = random_blocks(GgmlQuant::q4_k, rows, cols, rng);
  std::vector<float> x(tokens * cols);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : x) v = nd(rng);
  WeightMatrix wm{io::DType::Q4_K, w.data(), static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)};
  std::vector<float> f32(tokens * rows), q8(tokens * rows), direct(tokens * rows);
  wm.activations = Q4Activations::f32;
  matmul(wm, x.data(), tokens, f32.data(), nullptr);
  wm.activations = Q4Activations::int8;
  matmul(wm, x.data(), tokens, q8.data(), nullptr);
  Q8ActBuffer act;
  quantize_act(x.data(), tokens, cols, cols, act);
  ggml_quant_matmul({GgmlQuant::q4_k, w.data(), rows, cols}, act.view(), direct.data(), rows, nullptr);
  std::vector<float> deq(cols);
  double err = 0, norm = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    dequantize_row(io::DType::Q4_K, w.data() + r * 288, deq.data(), cols);
    for (std::size_t t = 0; t < tokens; ++t) {
      float want = 0;  // the reference path's own result is checked elsewhere; here: close to it
      for (std::size_t i = 0; i < cols; ++i) want += deq[i] * x[t * cols + i];
      EXPECT_NEAR(f32[t * rows + r], want, 1e-4 * (1 + std::fabs(want)));
      EXPECT_EQ(q8[t * rows + r], direct[t * rows + r]);
      err += (q8[t * rows + r] - want) * (q8[t * rows + r] - want);
      norm += double(want) * want;
    }
  }
  EXPECT_GT(err, 0.0);                         // activation rounding is applied
  EXPECT_LT(std::sqrt(err / norm), 0.02);      // and small
}

}  // namespace
}  // namespace ringlm::kernels

// The GGUF writer's Q4_0 (quantize_row, used by `ringlm convert --out X.gguf`) is ggml's
// reference rule, the same codes and scales as load-time and packed-directory quantization.
TEST(GgmlKernels, GgufWriterQ4_0IsTheReferenceRule) {
  std::mt19937 rng(31);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(32 * 200);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(nd(rng), static_cast<int>(i / 32 % 24) - 12);
  std::vector<ringlm::kernels::BlockQ4_0> want(200), got(200);
  ringlm::kernels::quantize_row_q4_0_ref(x.data(), want.data(), x.size());
  ringlm::kernels::quantize_row(ringlm::io::DType::Q4_0, x.data(), got.data(), static_cast<std::int64_t>(x.size()));
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(ringlm::kernels::BlockQ4_0) * want.size()));
}
