// x86 kernels for the q4kp16 layout (q4k_packed.h), included by ggml_kernels_{avx2,avx512,
// avx512vnni}.cpp after ggml_kernels_x86_impl.h (same pragma, same RINGLM_GGML_VNNI), with
// RINGLM_GGML_AVX512 selecting 512-bit vectors (16 rows per register) or AVX2 (two halves
// of 8 rows). Per sub-block of 16 rows: four 64-byte code lines, nibble masks, eight u8 x s8
// dot steps against the activation's bytes broadcast 4 at a time (as the q4_0 kernels), then
// one int->float conversion, the scale FMA and the min FMA for all rows at once:
//   acc += cvt(S) * (d*sc * d_x)  -  (dmin*mn * d_x) * sum(q),   d*sc, dmin*mn exact in f32.
// Without VNNI the eight steps sum in int16: pairs <= 2*15*127, eight of them <= 30480.
#ifndef RINGLM_GGML_AVX512
#error "define RINGLM_GGML_AVX512 (0 or 1) before including q4k_kernels_x86_impl.h"
#endif

namespace {

#if RINGLM_GGML_AVX512
using VecI = __m512i;
using VecF = __m512;
constexpr int kLanes = 16;
inline VecI vbcast4(const std::int8_t* p) { std::int32_t v; std::memcpy(&v, p, 4); return _mm512_set1_epi32(v); }
inline VecI vload(const std::uint8_t* p) { return _mm512_loadu_si512(p); }
inline VecI vand(VecI a, VecI b) { return _mm512_and_si512(a, b); }
inline VecI vsrl4(VecI a) { return _mm512_srli_epi16(a, 4); }
inline VecI vset8(char c) { return _mm512_set1_epi8(c); }
inline VecF vsetf(float f) { return _mm512_set1_ps(f); }
inline VecF vzero() { return _mm512_setzero_ps(); }
inline VecF vmul(VecF a, VecF b) { return _mm512_mul_ps(a, b); }
inline VecF vfma(VecF a, VecF b, VecF c) { return _mm512_fmadd_ps(a, b, c); }
inline VecF vfnma(VecF a, VecF b, VecF c) { return _mm512_fnmadd_ps(a, b, c); }
inline VecF vcvt(VecI a) { return _mm512_cvtepi32_ps(a); }
// 16 u8 (row scales / mins) -> float; 16 fp16 -> float.
inline VecF vu8f(const std::uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
inline VecF vf16(const std::uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline VecI vdot4(VecI acc, VecI u, VecI s) {
#if RINGLM_GGML_VNNI
  return _mm512_dpbusd_epi32(acc, u, s);
#else
  return _mm512_add_epi16(acc, _mm512_maddubs_epi16(u, s));  // int16 partial sums
#endif
}
inline VecI vfinish(VecI acc) {
#if RINGLM_GGML_VNNI
  return acc;
#else
  return _mm512_madd_epi16(acc, _mm512_set1_epi16(1));
#endif
}
inline VecI vzeroi() { return _mm512_setzero_si512(); }
inline VecI vadd32(VecI a, VecI b) { return _mm512_add_epi32(a, b); }
inline VecI vadd16(VecI a, VecI b) { return _mm512_add_epi16(a, b); }
#else
using VecI = __m256i;
using VecF = __m256;
constexpr int kLanes = 8;
inline VecI vbcast4(const std::int8_t* p) { std::int32_t v; std::memcpy(&v, p, 4); return _mm256_set1_epi32(v); }
inline VecI vload(const std::uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline VecI vand(VecI a, VecI b) { return _mm256_and_si256(a, b); }
inline VecI vsrl4(VecI a) { return _mm256_srli_epi16(a, 4); }
inline VecI vset8(char c) { return _mm256_set1_epi8(c); }
inline VecF vsetf(float f) { return _mm256_set1_ps(f); }
inline VecF vzero() { return _mm256_setzero_ps(); }
inline VecF vmul(VecF a, VecF b) { return _mm256_mul_ps(a, b); }
inline VecF vfma(VecF a, VecF b, VecF c) { return _mm256_fmadd_ps(a, b, c); }
inline VecF vfnma(VecF a, VecF b, VecF c) { return _mm256_fnmadd_ps(a, b, c); }
inline VecF vcvt(VecI a) { return _mm256_cvtepi32_ps(a); }
inline VecF vu8f(const std::uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline VecF vf16(const std::uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline VecI vdot4(VecI acc, VecI u, VecI s) {
#if RINGLM_GGML_VNNI
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_add_epi16(acc, _mm256_maddubs_epi16(u, s));
#endif
}
inline VecI vfinish(VecI acc) {
#if RINGLM_GGML_VNNI
  return acc;
#else
  return _mm256_madd_epi16(acc, _mm256_set1_epi16(1));
#endif
}
inline VecI vzeroi() { return _mm256_setzero_si256(); }
inline VecI vadd32(VecI a, VecI b) { return _mm256_add_epi32(a, b); }
inline VecI vadd16(VecI a, VecI b) { return _mm256_add_epi16(a, b); }
#endif

constexpr int kHalves = static_cast<int>(kQ4KGroupRows) / kLanes;  // 1 (AVX-512) or 2 (AVX2)

// The accumulators of one 16-row tile (q4kp16, q6kp16, q8p16, iq4xsp16, q3kp16, q5kp16 all group 16 rows) for
// activation rows m0..m0+MT: zero, or the partial sums y already holds (later K chunks).
// Only the group's `valid` rows of y are read or written, so a padded last group never
// touches y past the matrix.
static_assert(kQ4KGroupRows == 16 && kQ6KGroupRows == 16 && kQ8GroupRows == 16 && kIq4XsGroupRows == 16 &&
              kQ3KGroupRows == 16 && kQ5KGroupRows == 16);
template <int MT>
inline void load_tile_acc(VecF (&acc)[MT][kHalves], bool accumulate, const float* y, std::size_t ldy,
                          std::size_t m0, std::size_t n0, std::size_t valid) {
  alignas(64) float tmp[16];
  for (int i = 0; i < MT; ++i) {
    if (!accumulate) {
      for (int h = 0; h < kHalves; ++h) acc[i][h] = vzero();
      continue;
    }
    std::memset(tmp, 0, sizeof tmp);
    std::memcpy(tmp, y + (m0 + i) * ldy + n0, valid * sizeof(float));
#if RINGLM_GGML_AVX512
    acc[i][0] = _mm512_load_ps(tmp);
#else
    acc[i][0] = _mm256_load_ps(tmp);
    acc[i][1] = _mm256_load_ps(tmp + 8);
#endif
  }
}

template <int MT>
inline void store_tile_acc(const VecF (&acc)[MT][kHalves], float* y, std::size_t ldy, std::size_t m0,
                           std::size_t n0, std::size_t valid) {
  alignas(64) float tmp[16];
  for (int i = 0; i < MT; ++i) {
#if RINGLM_GGML_AVX512
    _mm512_store_ps(tmp, acc[i][0]);
#else
    _mm256_store_ps(tmp, acc[i][0]);
    _mm256_store_ps(tmp + 8, acc[i][1]);
#endif
    std::memcpy(y + (m0 + i) * ldy + n0, tmp, valid * sizeof(float));
  }
}

// Integer dot of one sub-block (codes lo[t] / hi[t] of kLanes rows) with activation bytes a.
inline VecI sub_dot(const VecI lo[4], const VecI hi[4], const std::int8_t* a) {
  VecI s0 = vzeroi(), s1 = vzeroi();
  for (int t = 0; t < 4; ++t) {
    s0 = vdot4(s0, lo[t], vbcast4(a + 4 * t));
    s1 = vdot4(s1, hi[t], vbcast4(a + 16 + 4 * t));
  }
#if RINGLM_GGML_VNNI
  return vadd32(s0, s1);
#else
  return vfinish(vadd16(s0, s1));
#endif
}

// y rows of group g (kQ4KGroupRows) for activation rows m0..m0+MT, super-blocks [s0, s1);
// adds to what y holds when `accumulate` (later K chunks), else overwrites it.
template <int MT>
void q4k_tile(const Q4KPacked& w, std::size_t g, std::size_t s0, std::size_t s1, bool accumulate,
              const Q8ActView& x, std::size_t m0, float* y, std::size_t ldy) {
  const std::size_t n0 = g * kQ4KGroupRows;
  const std::size_t valid = w.rows - n0 < kQ4KGroupRows ? w.rows - n0 : kQ4KGroupRows;
  const std::size_t nb = x.cols / 32;
  const VecI mask = vset8(0x0f);
  VecF acc[MT][kHalves];
  load_tile_acc<MT>(acc, accumulate, y, ldy, m0, n0, valid);
  for (std::size_t s = s0; s < s1; ++s) {
    const std::uint8_t* sp = w.super(g, s);
    for (int h = 0; h < kHalves; ++h) {
      const VecF dv = vf16(sp + Q4KPacked::kDOffset + 2 * kLanes * h);
      const VecF mv = vf16(sp + Q4KPacked::kDminOffset + 2 * kLanes * h);
      for (std::size_t j = 0; j < 8; ++j) {
        const std::uint8_t* cb = sp + j * 256 + 4 * kLanes * h;
        if (h == 0) {
          for (int l = 0; l < 4; ++l)
            _mm_prefetch(reinterpret_cast<const char*>(sp + Q4KPacked::kSuperBytes + j * 256 + 64 * l), _MM_HINT_T0);
          if (j == 7)
            for (int l = 0; l < 5; ++l)
              _mm_prefetch(reinterpret_cast<const char*>(sp + Q4KPacked::kSuperBytes + Q4KPacked::kScOffset + 64 * l),
                           _MM_HINT_T0);
        }
        VecI lo[4], hi[4];
        for (int t = 0; t < 4; ++t) {
          const VecI c = vload(cb + 64 * t);
          lo[t] = vand(c, mask);
          hi[t] = vand(vsrl4(c), mask);
        }
        const VecF scv = vmul(vu8f(sp + Q4KPacked::kScOffset + j * 16 + kLanes * h), dv);
        const VecF mnv = vmul(vu8f(sp + Q4KPacked::kMnOffset + j * 16 + kLanes * h), mv);
        const std::size_t b = s * 8 + j;
        for (int i = 0; i < MT; ++i) {
          const std::size_t m = m0 + static_cast<std::size_t>(i), xb = m * nb + b;
          for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
            const std::int8_t* a = (plane ? x.qs2 : x.qs) + m * x.cols + b * 32;
            const float dx = plane ? x.d2[xb] : x.d[xb];
            const float sumq = static_cast<float>(-(plane ? x.bias2[xb] : x.bias[xb]) / 8);
            const VecI isum = sub_dot(lo, hi, a);
            acc[i][h] = vfma(vcvt(isum), vmul(scv, vsetf(dx)), acc[i][h]);
            acc[i][h] = vfnma(vmul(mnv, vsetf(dx)), vsetf(sumq), acc[i][h]);
          }
        }
      }
    }
  }
  store_tile_acc<MT>(acc, y, ldy, m0, n0, valid);
}

// The loop every 16-row layout's groups function runs: per group, K in chunks of `chunk`
// blocks (or super-blocks) so a group's weights stay in L1 while they are re-read per 4
// activation rows, then the rows 4 at a time and the 1-3 left. tile(mt, g, k0, k1,
// accumulate, m) runs one tile; mt is a std::integral_constant<int, MT>.
template <class Tile>
inline void run_row_tiles(std::size_t g0, std::size_t g1, std::size_t nk, std::size_t chunk, std::size_t rows,
                          Tile&& tile) {
  for (std::size_t g = g0; g < g1; ++g)
    for (std::size_t k0 = 0; k0 < nk; k0 += chunk) {
      const std::size_t k1 = k0 + chunk < nk ? k0 + chunk : nk;
      std::size_t m = 0;
      for (; m + 4 <= rows; m += 4) tile(std::integral_constant<int, 4>{}, g, k0, k1, k0 != 0, m);
      switch (rows - m) {
        case 3: tile(std::integral_constant<int, 3>{}, g, k0, k1, k0 != 0, m); break;
        case 2: tile(std::integral_constant<int, 2>{}, g, k0, k1, k0 != 0, m); break;
        case 1: tile(std::integral_constant<int, 1>{}, g, k0, k1, k0 != 0, m); break;
        default: break;
      }
    }
}

void q4k_groups(const Q4KPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y, std::size_t ldy) {
  constexpr std::size_t kMT = 4;  // activation rows sharing one load+unpack of a sub-block
  // With more activation rows a group's weights are re-read per 4 rows: K chunks of 8
  // super-blocks (18.9 KB for 16 rows) keep that re-read in L1.
  const std::size_t ns = w.superblocks();
  const std::size_t chunk = x.rows > kMT ? 8 : ns;
  run_row_tiles(g0, g1, ns, chunk, x.rows, [&](auto mt, std::size_t g, std::size_t k0, std::size_t k1, bool accumulate,
                                               std::size_t m) {
    q4k_tile<decltype(mt)::value>(w, g, k0, k1, accumulate, x, m, y, ldy);
  });
}

}  // namespace
