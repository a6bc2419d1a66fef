// Stand-alone check of the kernels without GoogleTest, for cross-built targets (run under
// qemu by neon_cross_test.sh): every available path against float64 on extreme blocks,
// the activation quantizer bit-identical to the reference, and the two aarch64 paths (neon,
// neon-dotprod) bit-identical to each other on tile remainders, padded groups and K-chunked
// shapes. Fails if the CPU reports the dot-product extension but neon-dotprod did not run.
// Exits 1 after reporting up to 10 mismatches.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "../ggml_test_support.h"
#include "../test_support.h"
#include "kernels/cpu_features.h"
#include "kernels/dispatch.h"
#include "kernels/ggml_quant_gemm.h"
#include "kernels/q4k_packed.h"
#include "kernels/q6k_packed.h"
#include "kernels/q8p16_packed.h"
#include "kernels/q4_gemm.h"

using namespace ringlm::kernels;

namespace {
int failures = 0;
void check(bool ok, const char* what, Isa isa, std::size_t i) {
  if (ok) return;
  if (++failures <= 10) std::printf("FAIL %s on %s at %zu\n", what, isa_name(isa), i);
}

bool has_isa(Isa isa) {
  for (Isa a : available_isas())
    if (a == isa) return true;
  return false;
}

// q4_matmul on every path for activation rows 1..max_m (both planes), against float64, and
// the aarch64 paths against each other bit for bit. y has a stride of rows + 3 with a
// sentinel in the gap, so a store past a group's real rows is caught.
void check_q4_tiles(std::size_t rows, std::size_t cols, std::initializer_list<std::size_t> ms, std::mt19937& rng,
                    ThreadPool& pool) {
  const std::size_t nb = cols / 32, ldy = rows + 3;
  const float sentinel = -12345.0f;
  const auto blocks = testing::random_q4_blocks(rows, cols, rng);
  Q4PackedBuffer wbuf(rows, cols);
  q4_pack(blocks.data(), rows, cols, wbuf.data());
  for (std::size_t m : ms) {
    const auto x = testing::random_activations(m, cols, rng);
    for (bool two : {false, true}) {
      std::vector<std::vector<float>> per_isa;
      std::vector<Isa> isas;
      for (Isa isa : available_isas()) {
        force_isa(isa);
        Q8ActBuffer act;
        quantize_act(x.data(), m, cols, cols, act, two);
        const Q8ActView v = act.view();
        std::vector<float> y(m * ldy, sentinel);
        q4_matmul(wbuf.view(), v, y.data(), ldy, m % 2 == 0 ? &pool : nullptr);
        for (std::size_t t = 0; t < m; ++t) {
          for (std::size_t n = 0; n < rows; ++n) {
            const auto ref = two ? testing::ref_q4_dot2(blocks.data() + n * nb, v.qs + t * cols, v.qs2 + t * cols,
                                                        v.d2 + t * nb, cols)
                                 : testing::ref_q4_dot(blocks.data() + n * nb, v.qs + t * cols, v.d + t * nb, cols);
            check(std::fabs(y[t * ldy + n] - ref.value) <= testing::tolerance(ref, nb),
                  two ? "q4 tile two planes" : "q4 tile", isa, t * ldy + n);
          }
          for (std::size_t n = rows; n < ldy; ++n)
            check(y[t * ldy + n] == sentinel, "q4 tile wrote past the real rows", isa, t * ldy + n);
        }
        per_isa.push_back(std::move(y));
        isas.push_back(isa);
      }
      const std::vector<float>* neon = nullptr;
      for (std::size_t i = 0; i < isas.size(); ++i)
        if (isas[i] == Isa::neon) neon = &per_isa[i];
      for (std::size_t i = 0; i < isas.size(); ++i)
        if (isas[i] == Isa::neon_dotprod && neon != nullptr)
          check(std::memcmp(neon->data(), per_isa[i].data(), per_isa[i].size() * 4) == 0,
                two ? "q4 tile two planes bit-identical to neon" : "q4 tile bit-identical to neon", isas[i], m);
    }
  }
}

// i8_gemv_q8 (LM head): the aarch64 paths bit-identical to each other (row counts around
// the 4-row tile, extreme rows of -127 / 127).
void check_i8_q8_identity(std::size_t cols, std::mt19937& rng, ThreadPool& pool) {
  if (!has_isa(Isa::neon) || !has_isa(Isa::neon_dotprod)) return;
  const std::size_t rows = 23;
  std::vector<std::int8_t> w(rows * cols);
  for (auto& v : w) v = static_cast<std::int8_t>(int(rng() % 255) - 127);
  for (std::size_t k = 0; k < cols; ++k) w[2 * cols + k] = -127, w[3 * cols + k] = 127;
  std::vector<float> sc(rows);
  for (std::size_t r = 0; r < rows; ++r) sc[r] = 0.001f * float(r + 1);
  const auto x = testing::random_activations(1, cols, rng);
  std::vector<float> y[2];
  int k = 0;
  for (Isa isa : {Isa::neon, Isa::neon_dotprod}) {
    force_isa(isa);
    Q8ActBuffer act;
    quantize_act(x.data(), 1, cols, cols, act);
    y[k].assign(rows, 0.0f);
    i8_gemv_q8(w.data(), sc.data(), rows, cols, act.view(), y[k].data(), k == 0 ? nullptr : &pool);
    ++k;
  }
  check(std::memcmp(y[0].data(), y[1].data(), rows * 4) == 0, "i8_gemv_q8 bit-identical to neon", Isa::neon_dotprod,
        cols);
}
}  // namespace

int main() {
  std::printf("cpu: %s\n", cpu_features().describe().c_str());
  std::mt19937 rng(31);
  ThreadPool pool(2);
  struct Shape { std::size_t rows, cols, m; };
  for (Shape s : {Shape{37, 96, 1}, Shape{33, 256, 5}, Shape{16, 32, 2}}) {
    const auto blocks = testing::random_q4_blocks(s.rows, s.cols, rng);
    Q4PackedBuffer wbuf(s.rows, s.cols);
    q4_pack(blocks.data(), s.rows, s.cols, wbuf.data());
    const auto x = testing::random_activations(s.m, s.cols, rng);
    std::vector<std::int8_t> qs(s.m * s.cols);
    std::vector<float> d(s.m * s.cols / 32);
    std::vector<std::int32_t> bias(d.size());
    for (std::size_t m = 0; m < s.m; ++m)
      quantize_act_row_ref(x.data() + m * s.cols, s.cols, qs.data() + m * s.cols, d.data() + m * s.cols / 32,
                           bias.data() + m * s.cols / 32);
    for (Isa isa : available_isas()) {
      force_isa(isa);
      Q8ActBuffer act;
      quantize_act(x.data(), s.m, s.cols, s.cols, act);
      const Q8ActView v = act.view();
      check(std::memcmp(v.qs, qs.data(), qs.size()) == 0 && std::memcmp(v.d, d.data(), d.size() * 4) == 0 &&
                std::memcmp(v.bias, bias.data(), bias.size() * 4) == 0,
            "quantize_act bit-identity", isa, 0);
      std::vector<float> y(s.m * s.rows);
      q4_matmul(wbuf.view(), v, y.data(), s.rows, &pool);
      for (std::size_t m = 0; m < s.m; ++m)
        for (std::size_t n = 0; n < s.rows; ++n) {
          const auto ref = testing::ref_q4_dot(blocks.data() + n * (s.cols / 32), v.qs + m * s.cols,
                                               v.d + m * (s.cols / 32), s.cols);
          check(std::fabs(y[m * s.rows + n] - ref.value) <= testing::tolerance(ref, s.cols / 32), "q4_matmul", isa,
                m * s.rows + n);
        }
      // Two-plane activations: bit-identical quantizer, kernel vs float64.
      {
        std::vector<std::int8_t> qs1(s.m * s.cols), qs2(s.m * s.cols);
        std::vector<float> d1(d.size()), d2(d.size());
        std::vector<std::int32_t> b1(d.size()), b2(d.size());
        for (std::size_t m = 0; m < s.m; ++m) {
          const std::size_t o = m * s.cols, ob = m * s.cols / 32;
          quantize_act_row_ref(x.data() + o, s.cols, qs1.data() + o, d1.data() + ob, b1.data() + ob, qs2.data() + o,
                               d2.data() + ob, b2.data() + ob);
        }
        Q8ActBuffer act2;
        quantize_act(x.data(), s.m, s.cols, s.cols, act2, true);
        const Q8ActView v2 = act2.view();
        check(std::memcmp(v2.qs2, qs2.data(), qs2.size()) == 0 && std::memcmp(v2.d2, d2.data(), d2.size() * 4) == 0 &&
                  std::memcmp(v2.bias2, b2.data(), b2.size() * 4) == 0,
              "two-plane quantize_act bit-identity", isa, 0);
        std::vector<float> y2(s.m * s.rows);
        q4_matmul(wbuf.view(), v2, y2.data(), s.rows, &pool);
        for (std::size_t m = 0; m < s.m; ++m)
          for (std::size_t n = 0; n < s.rows; ++n) {
            const std::size_t nb = s.cols / 32;
            const auto ref = testing::ref_q4_dot2(blocks.data() + n * nb, v2.qs + m * s.cols, v2.qs2 + m * s.cols,
                                                  v2.d2 + m * nb, s.cols);
            check(std::fabs(y2[m * s.rows + n] - ref.value) <= testing::tolerance(ref, nb), "two-plane q4_matmul", isa,
                  m * s.rows + n);
          }
      }
      // int8 rows (LM head), x in f32 and in q8.
      const std::size_t rows = 21;
      std::vector<std::int8_t> w8(rows * s.cols);
      for (std::size_t i = 0; i < w8.size(); ++i) w8[i] = static_cast<std::int8_t>(int(rng() % 255) - 127);
      std::vector<float> sc(rows, 0.01f), yf(rows), yq(rows);
      i8_gemv_f32(w8.data(), sc.data(), rows, s.cols, x.data(), yf.data(), &pool);
      i8_gemv_q8(w8.data(), sc.data(), rows, s.cols, v, yq.data(), &pool);
      for (std::size_t r = 0; r < rows; ++r) {
        double ef = 0, mf = 0, eq = 0, mq = 0;
        for (std::size_t k = 0; k < s.cols; ++k) {
          ef += double(w8[r * s.cols + k]) * x[k];
          mf += std::fabs(double(w8[r * s.cols + k]) * x[k]);
          const double t = double(w8[r * s.cols + k]) * v.qs[k] * v.d[k / 32];
          eq += t;
          mq += std::fabs(t);
        }
        check(std::fabs(yf[r] - 0.01 * ef) <= 1e-6 * 0.01 * mf * (1 + s.cols / 64.0) + 1e-30, "i8_gemv_f32", isa, r);
        check(std::fabs(yq[r] - 0.01 * eq) <= 1e-6 * 0.01 * mq * (1 + s.cols / 64.0) + 1e-30, "i8_gemv_q8", isa, r);
      }
    }
  }
  // Tile remainders (1..17 activation rows), padded groups (35 rows: the last group has one
  // partial quad of 3 rows and one quad of padding), one-group shapes, K-chunked shapes
  // (65 and 130 blocks: chunks of 64 plus a remainder).
  check_q4_tiles(35, 96, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, rng, pool);
  check_q4_tiles(16, 32, {1, 5, 9}, rng, pool);
  check_q4_tiles(3, 64, {4, 8}, rng, pool);
  check_q4_tiles(21, 65 * 32, {1, 8, 13}, rng, pool);
  check_q4_tiles(17, 130 * 32, {3, 17}, rng, pool);
  for (std::size_t cols : {32, 96, 1536}) check_i8_q8_identity(cols, rng, pool);
  // ggml-block kernels (Q8_0 / Q4_K / Q5_K / Q6_K; on aarch64 the scalar path serves them).
  for (GgmlQuant type : {GgmlQuant::q8_0, GgmlQuant::q4_k, GgmlQuant::q5_k, GgmlQuant::q6_k}) {
    const std::size_t rows = 19, cols = 512, m = 3;
    const auto w = testing::random_blocks(type, rows, cols, rng);
    const GgmlQuantMatrix wm{type, w.data(), rows, cols};
    const auto x = testing::random_activations(m, cols, rng);
    for (Isa isa : available_isas()) {
      force_isa(isa);
      for (bool two : {false, true}) {
        Q8ActBuffer act;
        quantize_act(x.data(), m, cols, cols, act, two);
        std::vector<float> y(m * rows);
        ggml_quant_matmul(wm, act.view(), y.data(), rows, &pool);
        for (std::size_t t = 0; t < m; ++t)
          for (std::size_t r = 0; r < rows; ++r) {
            const auto ref = testing::ref_ggml_dot(type, w.data() + r * wm.row_bytes(), act.view(), t);
            check(std::fabs(y[t * rows + r] - ref.value) <= testing::ggml_tolerance(ref, cols), ggml_quant_name(type),
                  isa, t * rows + r);
          }
      }
    }
  }
  {  // Q4_K repacked into q4kp16
    const std::size_t rows = 21, cols = 2560, m = 6;
    const auto w = testing::random_blocks(GgmlQuant::q4_k, rows, cols, rng);
    const std::size_t rb = cols / 256 * sizeof(BlockQ4_K);
    std::vector<std::uint8_t> packed(q4k_packed_bytes(rows, cols), 0);
    for (std::size_t r = 0; r < rows; ++r)
      q4k_pack_row(reinterpret_cast<const BlockQ4_K*>(w.data() + r * rb), r, rows, cols, packed.data());
    const auto x = testing::random_activations(m, cols, rng);
    for (Isa isa : available_isas()) {
      force_isa(isa);
      Q8ActBuffer act;
      quantize_act(x.data(), m, cols, cols, act);
      std::vector<float> y(m * rows);
      q4k_matmul(Q4KPacked{packed.data(), rows, cols}, act.view(), y.data(), rows, &pool);
      for (std::size_t t = 0; t < m; ++t)
        for (std::size_t r = 0; r < rows; ++r) {
          const auto ref = testing::ref_ggml_dot(GgmlQuant::q4_k, w.data() + r * rb, act.view(), t);
          check(std::fabs(y[t * rows + r] - ref.value) <= testing::ggml_tolerance(ref, cols), "q4k_matmul", isa,
                t * rows + r);
        }
    }
  }
  {  // Q8_0 repacked into q8p16
    const std::size_t rows = 21, cols = 1280, m = 6;
    const auto w = testing::random_blocks(GgmlQuant::q8_0, rows, cols, rng);
    const std::size_t rb = cols / 32 * sizeof(BlockQ8_0);
    std::vector<std::uint8_t> packed(q8p16_packed_bytes(rows, cols), 0);
    for (std::size_t r = 0; r < rows; ++r)
      q8p16_pack_row(reinterpret_cast<const BlockQ8_0*>(w.data() + r * rb), r, rows, cols, packed.data());
    const auto x = testing::random_activations(m, cols, rng);
    for (Isa isa : available_isas()) {
      force_isa(isa);
      Q8ActBuffer act;
      quantize_act(x.data(), m, cols, cols, act);
      std::vector<float> y(m * rows);
      q8p16_matmul(Q8P16Packed{packed.data(), rows, cols}, act.view(), y.data(), rows, &pool);
      for (std::size_t t = 0; t < m; ++t)
        for (std::size_t r = 0; r < rows; ++r) {
          const auto ref = testing::ref_ggml_dot(GgmlQuant::q8_0, w.data() + r * rb, act.view(), t);
          check(std::fabs(y[t * rows + r] - ref.value) <= testing::ggml_tolerance(ref, cols), "q8p16_matmul", isa,
                t * rows + r);
        }
    }
  }
  {  // Q6_K repacked into q6kp16
    const std::size_t rows = 21, cols = 2560, m = 6;
    const auto w = testing::random_blocks(GgmlQuant::q6_k, rows, cols, rng);
    const std::size_t rb = cols / 256 * sizeof(BlockQ6_K);
    std::vector<std::uint8_t> packed(q6k_packed_bytes(rows, cols), 0);
    for (std::size_t r = 0; r < rows; ++r)
      q6k_pack_row(reinterpret_cast<const BlockQ6_K*>(w.data() + r * rb), r, rows, cols, packed.data());
    const auto x = testing::random_activations(m, cols, rng);
    for (Isa isa : available_isas()) {
      force_isa(isa);
      Q8ActBuffer act;
      quantize_act(x.data(), m, cols, cols, act);
      std::vector<float> y(m * rows);
      q6k_matmul(Q6KPacked{packed.data(), rows, cols}, act.view(), y.data(), rows, &pool);
      for (std::size_t t = 0; t < m; ++t)
        for (std::size_t r = 0; r < rows; ++r) {
          const auto ref = testing::ref_ggml_dot(GgmlQuant::q6_k, w.data() + r * rb, act.view(), t);
          check(std::fabs(y[t * rows + r] - ref.value) <= testing::ggml_tolerance(ref, cols), "q6k_matmul", isa,
                t * rows + r);
        }
    }
  }
  std::printf("paths checked:");
  for (Isa isa : available_isas()) std::printf(" %s", isa_name(isa));
  // qemu's default CPU ("max") has DotProd: a build or dispatch that silently lost the
  // neon-dotprod path must not pass.
  if (cpu_features().neon_dotprod && !has_isa(Isa::neon_dotprod)) {
    std::printf("\nFAIL: the CPU reports neon-dotprod but that path is not available");
    ++failures;
  }
  std::printf("\n%s (%d failures)\n", failures == 0 ? "OK" : "FAILED", failures);
  return failures == 0 ? 0 : 1;
}
