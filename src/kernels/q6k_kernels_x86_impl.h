// x86 kernels for the q6kp16 layout (q6k_packed.h), included after q4k_kernels_x86_impl.h
// (whose vector wrappers, 512- or 256-bit, they use). Per block of 32 values and 16 rows:
// four low-nibble lines and two high-bit lines give 6-bit codes 0..63 for values 4t..4t+3
// (first half, sub-block 2j) and 16+4t..16+4t+3 (second half, sub-block 2j+1) in each
// row's lane; four u8 x s8 dot steps per half; then per half
//   acc += cvt(S - 32 * sum(a over the half)) * (d * sc * d_x),   d * sc exact in f32.
// Without VNNI each step is widened at once (a pair can reach 2*63*127 = 16002).

namespace {

#if RINGLM_GGML_AVX512
inline VecI vor(VecI a, VecI b) { return _mm512_or_si512(a, b); }
inline VecI vsll4(VecI a) { return _mm512_slli_epi16(a, 4); }
inline VecI vsrl2(VecI a) { return _mm512_srli_epi16(a, 2); }
inline VecI vsub32(VecI a, VecI b) { return _mm512_sub_epi32(a, b); }
inline VecI vset32(std::int32_t v) { return _mm512_set1_epi32(v); }
inline VecF vi8f(const std::uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
#else
inline VecI vor(VecI a, VecI b) { return _mm256_or_si256(a, b); }
inline VecI vsll4(VecI a) { return _mm256_slli_epi16(a, 4); }
inline VecI vsrl2(VecI a) { return _mm256_srli_epi16(a, 2); }
inline VecI vsub32(VecI a, VecI b) { return _mm256_sub_epi32(a, b); }
inline VecI vset32(std::int32_t v) { return _mm256_set1_epi32(v); }
inline VecF vi8f(const std::uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
#endif

// One u8 x s8 dot step widened to int32 lanes.
inline VecI vdot4w(VecI acc, VecI u, VecI s) {
#if RINGLM_GGML_VNNI
  return vdot4(acc, u, s);
#elif RINGLM_GGML_AVX512
  return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

// Sums of a[0..15] and a[16..31] (int8) via SAD on a + 128.
inline void half_sums(const std::int8_t* a, std::int32_t* lo, std::int32_t* hi) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80)), zero = _mm_setzero_si128();
  const __m128i s0 = _mm_sad_epu8(_mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)), flip), zero);
  const __m128i s1 =
      _mm_sad_epu8(_mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 16)), flip), zero);
  *lo = _mm_cvtsi128_si32(s0) + _mm_extract_epi16(s0, 4) - 16 * 128;
  *hi = _mm_cvtsi128_si32(s1) + _mm_extract_epi16(s1, 4) - 16 * 128;
}

template <int MT>
void q6k_tile(const Q6KPacked& w, std::size_t g, std::size_t s0, std::size_t s1, bool accumulate,
              const Q8ActView& x, std::size_t m0, float* y, std::size_t ldy) {
  const std::size_t n0 = g * kQ6KGroupRows;
  const std::size_t valid = w.rows - n0 < kQ6KGroupRows ? w.rows - n0 : kQ6KGroupRows;
  const std::size_t nb = x.cols / 32;
  const VecI m4 = vset8(0x0f), m2 = vset8(3);
  VecF acc[MT][kHalves];
  load_tile_acc<MT>(acc, accumulate, y, ldy, m0, n0, valid);
  for (std::size_t s = s0; s < s1; ++s) {
    const std::uint8_t* sp = w.super(g, s);
    for (int h = 0; h < kHalves; ++h) {
      const VecF dv = vf16(sp + Q6KPacked::kDOffset + 2 * kLanes * h);
      for (std::size_t j = 0; j < 8; ++j) {
        const std::uint8_t* bp = sp + j * Q6KPacked::kBlockBytes + 4 * kLanes * h;
        if (h == 0)
          for (int l = 0; l < 6; ++l)
            _mm_prefetch(reinterpret_cast<const char*>(sp + Q6KPacked::kSuperBytes + j * Q6KPacked::kBlockBytes + 64 * l),
                         _MM_HINT_T0);
        VecI lo[4], hi[4];
        for (int u = 0; u < 2; ++u) {
          const VecI hb0 = vload(bp + 256 + 64 * u), hb2 = vsrl2(hb0), hb4 = vsrl2(hb2), hb6 = vsrl2(hb4);
          for (int k = 0; k < 2; ++k) {
            const int t = 2 * u + k;
            const VecI c = vload(bp + 64 * t);
            lo[t] = vor(vand(c, m4), vsll4(vand(k ? hb4 : hb0, m2)));
            hi[t] = vor(vand(vsrl4(c), m4), vsll4(vand(k ? hb6 : hb2, m2)));
          }
        }
        const VecF scl = vmul(vi8f(sp + Q6KPacked::kScOffset + (2 * j) * 16 + kLanes * h), dv);
        const VecF sch = vmul(vi8f(sp + Q6KPacked::kScOffset + (2 * j + 1) * 16 + kLanes * h), dv);
        const std::size_t b = s * 8 + j;
        for (int i = 0; i < MT; ++i) {
          const std::size_t m = m0 + static_cast<std::size_t>(i), xb = m * nb + b;
          for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
            const std::int8_t* a = (plane ? x.qs2 : x.qs) + m * x.cols + b * 32;
            const float dx = plane ? x.d2[xb] : x.d[xb];
            std::int32_t sa_lo, sa_hi;
            half_sums(a, &sa_lo, &sa_hi);
            VecI sl = vset32(-32 * sa_lo), sh = vset32(-32 * sa_hi);
            for (int t = 0; t < 4; ++t) {
              sl = vdot4w(sl, lo[t], vbcast4(a + 4 * t));
              sh = vdot4w(sh, hi[t], vbcast4(a + 16 + 4 * t));
            }
            acc[i][h] = vfma(vcvt(sl), vmul(scl, vsetf(dx)), acc[i][h]);
            acc[i][h] = vfma(vcvt(sh), vmul(sch, vsetf(dx)), acc[i][h]);
          }
        }
      }
    }
  }
  store_tile_acc<MT>(acc, y, ldy, m0, n0, valid);
}

void q6k_groups(const Q6KPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y, std::size_t ldy) {
  constexpr std::size_t kMT = 4;
  const std::size_t ns = w.superblocks();
  const std::size_t chunk = x.rows > kMT ? 6 : ns;  // 6 super-blocks = 19.7 KB for 16 rows
  run_row_tiles(g0, g1, ns, chunk, x.rows, [&](auto mt, std::size_t g, std::size_t k0, std::size_t k1, bool accumulate,
                                               std::size_t m) {
    q6k_tile<decltype(mt)::value>(w, g, k0, k1, accumulate, x, m, y, ldy);
  });
}

}  // namespace
