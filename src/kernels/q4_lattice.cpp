#include "kernels/q4_lattice.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "util/float16.h"

namespace ringlm::kernels {

namespace {

// v as the source file would have stored it.
float round_to(io::DType source, float v) {
  if (source == io::DType::BF16) return bf16_to_f32(f32_to_bf16(v));
  if (source == io::DType::F16) return fp16_to_f32(f32_to_fp16(v));
  return v;
}

bool try_scale(const float* x, io::DType source, float s, std::int8_t* codes) {
  if (!(s > 0.0f) || !std::isfinite(s)) return false;
  bool minus8 = false, plus8 = false;
  for (std::size_t i = 0; i < kQBlock; ++i) {
    const float q = std::nearbyint(x[i] / s);
    if (q > 8.0f || q < -8.0f || round_to(source, q * s) != x[i]) return false;
    minus8 |= q == -8.0f;
    plus8 |= q == 8.0f;
    codes[i] = static_cast<std::int8_t>(q);
  }
  return !(minus8 && plus8);  // 17 levels do not fit in 4 bits
}

bool fp16_exact(float v) { return fp16_to_f32(f32_to_fp16(v)) == v; }

// The largest-magnitude element sits at some code k in 1..8, so s is amax / k up to the
// source's rounding of k * s: try the bf16 value nearest amax / k first (QAT scales are
// bf16, docs/quantization.md), then amax / k itself (exact for f32 files), then the bf16
// neighbours (a bf16 file rounds k * s, which can move amax / k past a bf16 midpoint).
bool find_lattice(const float* x, io::DType source, float amax, float* scale, std::int8_t* codes) {
  for (int k = 8; k >= 1; --k) {
    const float base = amax / static_cast<float>(k);
    const float b = bf16_to_f32(f32_to_bf16(base));
    const std::uint32_t bb = f32_to_bits(b);
    const float cands[4] = {b, base, bits_to_f32(bb - 0x10000u), bits_to_f32(bb + 0x10000u)};
    for (int i = 0; i < 4; ++i) {
      if (i > 0 && cands[i] == cands[0]) continue;
      if (try_scale(x, source, cands[i], codes)) {
        *scale = cands[i];
        return true;
      }
    }
  }
  return false;
}

// A lattice block has at most 9 distinct magnitudes (|c| * s for |c| = 0..8, each rounded
// the same way); ordinary weights have ~32. Rejecting on the 10th distinct magnitude keeps
// the search below off ordinary checkpoints (it would cost ~30x ggml's rule per block).
bool few_magnitudes(const float* x) {
  // First a branch-free lower bound: magnitudes hashed into 64 buckets; more than 9 buckets
  // hit means more than 9 distinct magnitudes (collisions only ever under-count).
  std::uint64_t hit = 0;
  for (std::size_t i = 0; i < kQBlock; ++i)
    hit |= std::uint64_t{1} << (((f32_to_bits(x[i]) & 0x7fffffffu) * 0x9E3779B1u) >> 26);
  if (__builtin_popcountll(hit) > 9) return false;
  float seen[9];
  int n = 0;
  for (std::size_t i = 0; i < kQBlock; ++i) {
    const float a = std::fabs(x[i]);
    int j = 0;
    while (j < n && seen[j] != a) ++j;
    if (j < n) continue;
    if (n == 9) return false;
    seen[n++] = a;
  }
  return true;
}

struct BlockFit {
  bool lattice = false;
  float scale = 0.0f;  // lattice: s; otherwise amax / 8 (ggml's |d|), for the factor's range
  std::int8_t codes[kQBlock];
};

// Lattice blocks stored exactly with the row factor `f` (a power of two).
std::size_t exact_with(const std::vector<BlockFit>& fits, float f) {
  std::size_t n = 0;
  for (const BlockFit& b : fits) n += b.lattice && fp16_exact(b.scale / f);
  return n;
}

}  // namespace

bool q4_lattice_block(const float* x, io::DType source, float* scale, std::int8_t* codes) {
  if (!few_magnitudes(x)) return false;  // the common case, first and cheap
  float amax = 0.0f;
  for (std::size_t i = 0; i < kQBlock; ++i) {
    if (!std::isfinite(x[i])) return false;
    amax = std::max(amax, std::fabs(x[i]));
  }
  if (amax == 0.0f) {
    *scale = 0.0f;
    std::fill(codes, codes + kQBlock, std::int8_t{0});
    return true;
  }
  return find_lattice(x, source, amax, scale, codes);
}

float quantize_row_q4_0_lattice(const float* x, io::DType source, BlockQ4_0* y, std::size_t k, bool allow_factor,
                                Q4LatticeStats* stats) {
  const std::size_t nb = k / kQBlock;
  thread_local std::vector<BlockFit> fits;
  thread_local std::vector<float> scaled;
  fits.resize(nb);
  std::size_t lattice = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    BlockFit& f = fits[b];
    f.lattice = q4_lattice_block(x + b * kQBlock, source, &f.scale, f.codes);
    lattice += f.lattice;
  }
  // A factor only when it stores more lattice blocks exactly: the largest scale the row needs
  // in fp16 (ggml's |d| = amax / 8 for the other blocks) lands in [2^14, 2^15), leaving
  // fp16's whole range below it for the small ones.
  float factor = 1.0f;
  std::size_t exact = lattice == 0 ? 0 : exact_with(fits, 1.0f);
  float top = 0.0f;
  if (allow_factor && exact < lattice) {
    for (std::size_t b = 0; b < nb; ++b) {
      float need = fits[b].scale;
      if (!fits[b].lattice) {
        float amax = 0.0f;
        for (std::size_t i = 0; i < kQBlock; ++i) amax = std::max(amax, std::fabs(x[b * kQBlock + i]));
        need = amax / 8.0f;
      }
      if (std::isfinite(need)) top = std::max(top, need);
    }
  }
  if (top > 0.0f) {
    const float f = std::ldexp(1.0f, std::ilogb(top) - 14);
    const std::size_t with_f = exact_with(fits, f);
    if (with_f > exact) factor = f, exact = with_f;
  }
  const float* src = x;
  if (factor != 1.0f) {
    scaled.resize(k);
    for (std::size_t i = 0; i < k; ++i) scaled[i] = x[i] / factor;  // exact: a power of two
    src = scaled.data();
  }
  // ggml's rule for every block first (the fast path), then the lattice blocks overwritten.
  quantize_row_q4_0_fast(src, y, k);
  for (std::size_t b = 0; b < nb; ++b) {
    const BlockFit& f = fits[b];
    if (!f.lattice) continue;
    bool has_plus8 = false;
    for (std::size_t i = 0; i < kQBlock; ++i) has_plus8 |= f.codes[i] == 8;
    // w = d * (q - 8): codes in [-8, 7] with d = s, codes in [-7, 8] with d = -s.
    const float d = (has_plus8 ? -f.scale : f.scale) / factor;
    y[b].d = f32_to_fp16(d);
    for (std::size_t j = 0; j < 16; ++j) {
      const int lo = has_plus8 ? 8 - f.codes[j] : f.codes[j] + 8;
      const int hi = has_plus8 ? 8 - f.codes[j + 16] : f.codes[j + 16] + 8;
      y[b].qs[j] = static_cast<std::uint8_t>(lo | (hi << 4));
    }
  }
  if (stats) {
    stats->blocks += nb;
    stats->lattice += lattice;
    stats->exact += exact;
    stats->rows_scaled += factor != 1.0f;
  }
  return factor;
}

void scale_outputs(float* out, std::size_t n, float factor) {
  for (std::size_t i = 0; i < n; ++i) out[i] *= factor;
}

}  // namespace ringlm::kernels
