// x86 kernels for the q5kp16 layout (q5k_packed.h), included after q4k_kernels_x86_impl.h
// (whose wrappers and tile helpers they use). Per sub-block of 16 rows: the q4kp16 code
// lines give the low nibbles, the high line adds the fifth bit ((h >> t) & 1) << 4 per step,
// so each step's bytes are codes 0..31; eight u8 x s8 dot steps, then as q4kp16
//   acc += cvt(S) * (d*sc * d_x)  -  (dmin*mn * d_x) * sum(q),   d*sc, dmin*mn exact in f32.
// Without VNNI each half's four steps sum in int16 (pairs <= 2*31*128, four of them
// <= 31744) and the halves are widened before they are added.

namespace {

#if RINGLM_GGML_AVX512
inline VecI q5_srl1(VecI a) { return _mm512_srli_epi16(a, 1); }
inline VecI q5_sll4(VecI a) { return _mm512_slli_epi16(a, 4); }
inline VecI q5_or(VecI a, VecI b) { return _mm512_or_si512(a, b); }
#else
inline VecI q5_srl1(VecI a) { return _mm256_srli_epi16(a, 1); }
inline VecI q5_sll4(VecI a) { return _mm256_slli_epi16(a, 4); }
inline VecI q5_or(VecI a, VecI b) { return _mm256_or_si256(a, b); }
#endif

// Integer dot of one sub-block (5-bit codes lo[t] / hi[t] of kLanes rows) with activation bytes a.
inline VecI q5_sub_dot(const VecI lo[4], const VecI hi[4], const std::int8_t* a) {
  VecI s0 = vzeroi(), s1 = vzeroi();
  for (int t = 0; t < 4; ++t) {
    s0 = vdot4(s0, lo[t], vbcast4(a + 4 * t));
    s1 = vdot4(s1, hi[t], vbcast4(a + 16 + 4 * t));
  }
  return vadd32(vfinish(s0), vfinish(s1));
}

template <int MT>
void q5k_tile(const Q5KPacked& w, std::size_t g, std::size_t s0, std::size_t s1, bool accumulate,
              const Q8ActView& x, std::size_t m0, float* y, std::size_t ldy) {
  const std::size_t n0 = g * kQ5KGroupRows;
  const std::size_t valid = w.rows - n0 < kQ5KGroupRows ? w.rows - n0 : kQ5KGroupRows;
  const std::size_t nb = x.cols / 32;
  const VecI mask = vset8(0x0f), one = vset8(1);
  VecF acc[MT][kHalves];
  load_tile_acc<MT>(acc, accumulate, y, ldy, m0, n0, valid);
  for (std::size_t s = s0; s < s1; ++s) {
    const std::uint8_t* sp = w.super(g, s);
    for (int h = 0; h < kHalves; ++h) {
      const VecF dv = vf16(sp + Q5KPacked::kDOffset + 2 * kLanes * h);
      const VecF mv = vf16(sp + Q5KPacked::kDminOffset + 2 * kLanes * h);
      for (std::size_t j = 0; j < 8; ++j) {
        const std::uint8_t* cb = sp + j * 256 + 4 * kLanes * h;
        if (h == 0) {
          for (int l = 0; l < 4; ++l)
            _mm_prefetch(reinterpret_cast<const char*>(sp + Q5KPacked::kSuperBytes + j * 256 + 64 * l), _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(sp + Q5KPacked::kSuperBytes + Q5KPacked::kHighOffset + j * 64),
                       _MM_HINT_T0);
          if (j == 7)
            for (int l = 0; l < 5; ++l)
              _mm_prefetch(reinterpret_cast<const char*>(sp + Q5KPacked::kSuperBytes + Q5KPacked::kScOffset + 64 * l),
                           _MM_HINT_T0);
        }
        VecI lo[4], hi[4];
        VecI hb = vload(sp + Q5KPacked::kHighOffset + j * 64 + 4 * kLanes * h);
        for (int t = 0; t < 4; ++t) {
          lo[t] = q5_or(vand(vload(cb + 64 * t), mask), q5_sll4(vand(hb, one)));
          hb = q5_srl1(hb);
        }
        for (int t = 0; t < 4; ++t) {
          hi[t] = q5_or(vand(vsrl4(vload(cb + 64 * t)), mask), q5_sll4(vand(hb, one)));
          hb = q5_srl1(hb);
        }
        const VecF scv = vmul(vu8f(sp + Q5KPacked::kScOffset + j * 16 + kLanes * h), dv);
        const VecF mnv = vmul(vu8f(sp + Q5KPacked::kMnOffset + j * 16 + kLanes * h), mv);
        const std::size_t b = s * 8 + j;
        for (int i = 0; i < MT; ++i) {
          const std::size_t m = m0 + static_cast<std::size_t>(i), xb = m * nb + b;
          for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
            const std::int8_t* a = (plane ? x.qs2 : x.qs) + m * x.cols + b * 32;
            const float dx = plane ? x.d2[xb] : x.d[xb];
            const float sumq = static_cast<float>(-(plane ? x.bias2[xb] : x.bias[xb]) / 8);
            const VecI isum = q5_sub_dot(lo, hi, a);
            acc[i][h] = vfma(vcvt(isum), vmul(scv, vsetf(dx)), acc[i][h]);
            acc[i][h] = vfnma(vmul(mnv, vsetf(dx)), vsetf(sumq), acc[i][h]);
          }
        }
      }
    }
  }
  store_tile_acc<MT>(acc, y, ldy, m0, n0, valid);
}

void q5k_groups(const Q5KPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y, std::size_t ldy) {
  constexpr std::size_t kMT = 4;
  const std::size_t ns = w.superblocks();
  const std::size_t chunk = x.rows > kMT ? 8 : ns;  // 8 super-blocks = 23 KB for 16 rows
  run_row_tiles(g0, g1, ns, chunk, x.rows, [&](auto mt, std::size_t g, std::size_t k0, std::size_t k1, bool accumulate,
                                               std::size_t m) {
    q5k_tile<decltype(mt)::value>(w, g, k0, k1, accumulate, x, m, y, ldy);
  });
}

}  // namespace
