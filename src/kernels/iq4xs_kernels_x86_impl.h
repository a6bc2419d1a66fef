// x86 kernels for the iq4xsp16 layout (iq4xs_packed.h), included after q6k_kernels_x86_impl.h
// (whose vector wrappers, 512- or 256-bit, they use). Per sub-block of 32 values and 16 rows:
// four 64-byte index lines, nibble masks, and one in-register table lookup (vpshufb, the 16
// levels repeated per 128-bit lane) per nibble line turn indices into levels. The levels L
// are signed (-127..113) but the dot instructions take u8 x s8, so the table holds
// U = L + 128 (1..241) and the offset is removed exactly in int32 afterwards:
//   S = sum U*a = sum L*a + 128*sum(a) = sum L*a - 16*bias   (bias = -8*sum(a), q8_act.h)
//   acc += cvt(S + 16*bias) * (d*(ls-32) * d_x),   d*(ls-32) exact in f32.
// With VNNI one vpdpbusd per step (no saturation). Without it vpmaddubsw would saturate
// (a pair can reach 2*241*128), so U is split into two tables T1 = ceil(U/2), T2 = floor(U/2)
// (T1 + T2 = U, each <= 121: a pair <= 30976) and each product is widened at once.

namespace {

#if RINGLM_GGML_VNNI
constexpr int kIq4Parts = 1;
#else
constexpr int kIq4Parts = 2;
#endif

// The lookup table(s), the 16 entries repeated in every 128-bit lane (built in memory and
// loaded: GCC 12 warns on its own _mm512_broadcast_i32x4).
inline void iq4_tables(VecI (&tab)[kIq4Parts]) {
  alignas(64) std::uint8_t t[kIq4Parts][4 * kLanes];
  for (int i = 0; i < 4 * kLanes; ++i) {
    const int u = kIq4nlValues[i % 16] + 128;
#if RINGLM_GGML_VNNI
    t[0][i] = static_cast<std::uint8_t>(u);
#else
    t[0][i] = static_cast<std::uint8_t>((u + 1) / 2);
    t[1][i] = static_cast<std::uint8_t>(u / 2);
#endif
  }
  for (int p = 0; p < kIq4Parts; ++p) tab[p] = vload(t[p]);
}

inline VecI vlut(VecI table, VecI idx) {
#if RINGLM_GGML_AVX512
  return _mm512_shuffle_epi8(table, idx);
#else
  return _mm256_shuffle_epi8(table, idx);
#endif
}

// Levels of one sub-block: [part][low/high nibble][step t].
struct Iq4Levels {
  VecI v[kIq4Parts][2][4];
};

// sum U*a over one sub-block (both nibble halves), int32 lanes.
inline VecI iq4_sub_dot(const Iq4Levels& c, const std::int8_t* a) {
  VecI s = vzeroi();
  for (int p = 0; p < kIq4Parts; ++p)
    for (int t = 0; t < 4; ++t) {
      s = vdot4w(s, c.v[p][0][t], vbcast4(a + 4 * t));
      s = vdot4w(s, c.v[p][1][t], vbcast4(a + 16 + 4 * t));
    }
  return s;
}

// y rows of group g for activation rows m0..m0+MT, super-blocks [s0, s1) (as q4k_tile).
template <int MT>
void iq4xs_tile(const Iq4XsPacked& w, std::size_t g, std::size_t s0, std::size_t s1, bool accumulate,
                const Q8ActView& x, std::size_t m0, float* y, std::size_t ldy) {
  const std::size_t n0 = g * kIq4XsGroupRows;
  const std::size_t valid = w.rows - n0 < kIq4XsGroupRows ? w.rows - n0 : kIq4XsGroupRows;
  const std::size_t nb = x.cols / 32;
  const VecI mask = vset8(0x0f);
  VecI tab[kIq4Parts];
  iq4_tables(tab);
  VecF acc[MT][kHalves];
  load_tile_acc<MT>(acc, accumulate, y, ldy, m0, n0, valid);
  for (std::size_t s = s0; s < s1; ++s) {
    const std::uint8_t* sp = w.super(g, s);
    for (int h = 0; h < kHalves; ++h) {
      const VecF dv = vf16(sp + Iq4XsPacked::kDOffset + 2 * kLanes * h);
      for (std::size_t j = 0; j < 8; ++j) {
        const std::uint8_t* cb = sp + j * 256 + 4 * kLanes * h;
        if (h == 0) {
          for (int l = 0; l < 4; ++l)
            _mm_prefetch(reinterpret_cast<const char*>(sp + Iq4XsPacked::kSuperBytes + j * 256 + 64 * l), _MM_HINT_T0);
          if (j == 7)
            for (int l = 0; l < 3; ++l)
              _mm_prefetch(reinterpret_cast<const char*>(sp + Iq4XsPacked::kSuperBytes + Iq4XsPacked::kScOffset + 64 * l),
                           _MM_HINT_T0);
        }
        Iq4Levels c;
        for (int t = 0; t < 4; ++t) {
          const VecI raw = vload(cb + 64 * t);
          const VecI lo = vand(raw, mask), hi = vand(vsrl4(raw), mask);
          for (int p = 0; p < kIq4Parts; ++p) {
            c.v[p][0][t] = vlut(tab[p], lo);
            c.v[p][1][t] = vlut(tab[p], hi);
          }
        }
        const VecF scv = vmul(vi8f(sp + Iq4XsPacked::kScOffset + j * 16 + kLanes * h), dv);
        const std::size_t b = s * 8 + j;
        for (int i = 0; i < MT; ++i) {
          const std::size_t m = m0 + static_cast<std::size_t>(i), xb = m * nb + b;
          for (int plane = 0; plane < (x.qs2 != nullptr ? 2 : 1); ++plane) {
            const std::int8_t* a = (plane ? x.qs2 : x.qs) + m * x.cols + b * 32;
            const float dx = plane ? x.d2[xb] : x.d[xb];
            const std::int32_t bias = plane ? x.bias2[xb] : x.bias[xb];
            const VecI isum = vadd32(iq4_sub_dot(c, a), vset32(16 * bias));
            acc[i][h] = vfma(vcvt(isum), vmul(scv, vsetf(dx)), acc[i][h]);
          }
        }
      }
    }
  }
  store_tile_acc<MT>(acc, y, ldy, m0, n0, valid);
}

void iq4xs_groups(const Iq4XsPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                  std::size_t ldy) {
  constexpr std::size_t kMT = 4;  // activation rows sharing one load+lookup of a sub-block
  // K chunks of 8 super-blocks (17.7 KB for 16 rows) keep the re-read per 4 rows in L1.
  const std::size_t ns = w.superblocks();
  const std::size_t chunk = x.rows > kMT ? 8 : ns;
  run_row_tiles(g0, g1, ns, chunk, x.rows, [&](auto mt, std::size_t g, std::size_t k0, std::size_t k1, bool accumulate,
                                               std::size_t m) {
    iq4xs_tile<decltype(mt)::value>(w, g, k0, k1, accumulate, x, m, y, ldy);
  });
}

}  // namespace
