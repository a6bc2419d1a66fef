// x86 kernels for the q3kp16 layout (q3k_packed.h), included after q6k_kernels_x86_impl.h
// (whose wrappers and half_sums they use). Per block of 32 values and 16 rows: two low-bit
// lines and one high-bit line give 3-bit codes 0..7 (low + 4*high) for values 4t..4t+3
// (first half, sub-block 2j) and 16+4t..16+4t+3 (second half, sub-block 2j+1) in each
// row's lane; four u8 x s8 dot steps per half; then per half
//   acc += cvt(S - 4 * sum(a over the half)) * (d * (s-32) * d_x),   d * (s-32) exact in f32.
// Without VNNI each step is widened at once (vdot4w), like q6kp16.

namespace {

#if RINGLM_GGML_AVX512
inline VecI q3_srl1(VecI a) { return _mm512_srli_epi16(a, 1); }
inline VecI q3_sll2(VecI a) { return _mm512_slli_epi16(a, 2); }
#else
inline VecI q3_srl1(VecI a) { return _mm256_srli_epi16(a, 1); }
inline VecI q3_sll2(VecI a) { return _mm256_slli_epi16(a, 2); }
#endif

template <int MT>
void q3k_tile(const Q3KPacked& w, std::size_t g, std::size_t s0, std::size_t s1, bool accumulate,
              const Q8ActView& x, std::size_t m0, float* y, std::size_t ldy) {
  const std::size_t n0 = g * kQ3KGroupRows;
  const std::size_t valid = w.rows - n0 < kQ3KGroupRows ? w.rows - n0 : kQ3KGroupRows;
  const std::size_t nb = x.cols / 32;
  const VecI m2 = vset8(3), m1 = vset8(1);
  VecF acc[MT][kHalves];
  load_tile_acc<MT>(acc, accumulate, y, ldy, m0, n0, valid);
  for (std::size_t s = s0; s < s1; ++s) {
    const std::uint8_t* sp = w.super(g, s);
    for (int h = 0; h < kHalves; ++h) {
      const VecF dv = vf16(sp + Q3KPacked::kDOffset + 2 * kLanes * h);
      for (std::size_t j = 0; j < 8; ++j) {
        const std::uint8_t* bp = sp + j * Q3KPacked::kBlockBytes + 4 * kLanes * h;
        if (h == 0)
          for (int l = 0; l < 3; ++l)
            _mm_prefetch(reinterpret_cast<const char*>(sp + Q3KPacked::kSuperBytes + j * Q3KPacked::kBlockBytes + 64 * l),
                         _MM_HINT_T0);
        VecI lo[4], hi[4];
        VecI l0 = vload(bp), l1 = vload(bp + 64), hb = vload(bp + 128);
        for (int t = 0; t < 4; ++t) {
          lo[t] = vor(vand(l0, m2), q3_sll2(vand(hb, m1)));
          l0 = vsrl2(l0);
          hb = q3_srl1(hb);
        }
        for (int t = 0; t < 4; ++t) {
          hi[t] = vor(vand(l1, m2), q3_sll2(vand(hb, m1)));
          l1 = vsrl2(l1);
          hb = q3_srl1(hb);
        }
        const VecF scl = vmul(vi8f(sp + Q3KPacked::kScOffset + (2 * j) * 16 + kLanes * h), dv);
        const VecF sch = vmul(vi8f(sp + Q3KPacked::kScOffset + (2 * j + 1) * 16 + kLanes * h), dv);
        const std::size_t b = s * 8 + j;
        for (int i = 0; i < MT; ++i) {
          const std::size_t m = m0 + static_cast<std::size_t>(i), xb = m * nb + b;
          for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
            const std::int8_t* a = (plane ? x.qs2 : x.qs) + m * x.cols + b * 32;
            const float dx = plane ? x.d2[xb] : x.d[xb];
            std::int32_t sa_lo, sa_hi;
            half_sums(a, &sa_lo, &sa_hi);
            VecI sl = vset32(-4 * sa_lo), sh = vset32(-4 * sa_hi);
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

void q3k_groups(const Q3KPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y, std::size_t ldy) {
  constexpr std::size_t kMT = 4;
  const std::size_t ns = w.superblocks();
  const std::size_t chunk = x.rows > kMT ? 8 : ns;  // 8 super-blocks = 14.6 KB for 16 rows
  run_row_tiles(g0, g1, ns, chunk, x.rows, [&](auto mt, std::size_t g, std::size_t k0, std::size_t k1, bool accumulate,
                                               std::size_t m) {
    q3k_tile<decltype(mt)::value>(w, g, k0, k1, accumulate, x, m, y, ldy);
  });
}

}  // namespace
