// x86 kernels for the q8p16 layout (q8p16_packed.h), included after q6k_kernels_x86_impl.h
// (vector wrappers of q4k_kernels_x86_impl.h). Per block of 32 values and 16 rows: eight
// 64-byte code lines (4 int8 values of each row per line), eight dot steps against the
// activation's bytes broadcast 4 at a time, one conversion and FMA with d_w * d_x.
// VNNI: (w ^ 0x80) = w + 128 as u8 times a, less 128 * sum(a) (exact in int32). Without
// VNNI: |w| as u8 times a with w's sign (vpsignb), a pair at most 2*128*127 = 32512, each
// step widened at once.

namespace {

#if RINGLM_GGML_AVX512
inline VecI vxor(VecI a, VecI b) { return _mm512_xor_si512(a, b); }
#else
inline VecI vxor(VecI a, VecI b) { return _mm256_xor_si256(a, b); }
#endif

template <int MT>
void q8p16_tile(const Q8P16Packed& w, std::size_t g, std::size_t b0, std::size_t b1, bool accumulate,
                const Q8ActView& x, std::size_t m0, float* y, std::size_t ldy) {
  const std::size_t n0 = g * kQ8GroupRows;
  const std::size_t valid = w.rows - n0 < kQ8GroupRows ? w.rows - n0 : kQ8GroupRows;
  const std::size_t nb = x.cols / 32;
  VecF acc[MT][kHalves];
  load_tile_acc<MT>(acc, accumulate, y, ldy, m0, n0, valid);
  for (std::size_t b = b0; b < b1; ++b) {
    const std::uint8_t* bp = w.block(g, b);
    for (int l = 0; l < 9; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(bp + 4 * Q8P16Packed::kBlockBytes + 64 * l), _MM_HINT_T0);
    for (int h = 0; h < kHalves; ++h) {
      const VecF dv = vf16(bp + Q8P16Packed::kDOffset + 2 * kLanes * h);
      VecI c[8];
#if RINGLM_GGML_VNNI
      for (int t = 0; t < 8; ++t) c[t] = vxor(vload(bp + 64 * t + 4 * kLanes * h), vset8(static_cast<char>(0x80)));
#else
      VecI raw[8];
      for (int t = 0; t < 8; ++t) {
        raw[t] = vload(bp + 64 * t + 4 * kLanes * h);
#if RINGLM_GGML_AVX512
        c[t] = _mm512_abs_epi8(raw[t]);
#else
        c[t] = _mm256_sign_epi8(raw[t], raw[t]);
#endif
      }
#endif
      for (int i = 0; i < MT; ++i) {
        const std::size_t m = m0 + static_cast<std::size_t>(i), xb = m * nb + b;
        for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
          const std::int8_t* a = (plane ? x.qs2 : x.qs) + m * x.cols + b * 32;
          const float dx = plane ? x.d2[xb] : x.d[xb];
#if RINGLM_GGML_VNNI
          // sum(q) = -bias / 8, so 128 * sum(q) = -16 * bias.
          VecI s = vset32(16 * (plane ? x.bias2[xb] : x.bias[xb]));
          for (int t = 0; t < 8; ++t) s = vdot4(s, c[t], vbcast4(a + 4 * t));
#else
          VecI s = vzeroi();
          for (int t = 0; t < 8; ++t) {
#if RINGLM_GGML_AVX512
            // No 512-bit vpsignb: negate a where w < 0, zero it where w == 0.
            const VecI av = vbcast4(a + 4 * t);
            const __mmask64 neg = _mm512_movepi8_mask(raw[t]);
            const __mmask64 zero = _mm512_testn_epi8_mask(raw[t], raw[t]);
            const VecI sa = _mm512_maskz_mov_epi8(~zero, _mm512_mask_sub_epi8(av, neg, _mm512_setzero_si512(), av));
            s = vdot4w(s, c[t], sa);
#else
            s = vdot4w(s, c[t], _mm256_sign_epi8(vbcast4(a + 4 * t), raw[t]));
#endif
          }
#endif
          acc[i][h] = vfma(vcvt(s), vmul(dv, vsetf(dx)), acc[i][h]);
        }
      }
    }
  }
  store_tile_acc<MT>(acc, y, ldy, m0, n0, valid);
}

void q8p16_groups(const Q8P16Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                  std::size_t ldy) {
  constexpr std::size_t kMT = 4;
  const std::size_t nb = w.blocks();
  const std::size_t chunk = x.rows > kMT ? 32 : nb;  // 32 blocks = 17 KB for 16 rows
  run_row_tiles(g0, g1, nb, chunk, x.rows, [&](auto mt, std::size_t g, std::size_t k0, std::size_t k1, bool accumulate,
                                               std::size_t m) {
    q8p16_tile<decltype(mt)::value>(w, g, k0, k1, accumulate, x, m, y, ldy);
  });
}

}  // namespace
