// attention.h kernels for aarch64 Advanced SIMD (4 floats per register, ARMv8.0 baseline);
// the code is attention_impl.h.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/attention_table.h"

#if defined(__aarch64__)
#include <arm_neon.h>

namespace ringlm::kernels {
namespace {

struct VecNeon {
  using R = float32x4_t;
  static constexpr int W = 4;
  static constexpr int kSlots = 4, kCols = 4;  // 16 accumulators of 32 registers
  static constexpr int kDenseRows = 6, kDenseRegs = 4;  // attention_dense_impl.h: 24 accumulators
  static R zero() { return vdupq_n_f32(0.0f); }
  static R set1(float x) { return vdupq_n_f32(x); }
  static R load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, R x) { vst1q_f32(p, x); }
  static R add(R a, R b) { return vaddq_f32(a, b); }
  static R sub(R a, R b) { return vsubq_f32(a, b); }
  static R mul(R a, R b) { return vmulq_f32(a, b); }
  static R fma(R a, R b, R c) { return vfmaq_f32(c, a, b); }
  static R min(R a, R b) { return vminq_f32(a, b); }
  static R max(R a, R b) { return vmaxq_f32(a, b); }
  static float hsum(R a) { return vaddvq_f32(a); }
  static float hmax(R a) { return vmaxvq_f32(a); }
  static R round(R a) { return vrndnq_f32(a); }
  static R pow2i(R k) {
    return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(k), vdupq_n_s32(127)), 23));
  }
  static R zero_below(R x, R t, R y) {
    return vreinterpretq_f32_u32(vandq_u32(vcgeq_f32(x, t), vreinterpretq_u32_f32(y)));
  }
  // fcvtl / fcvtn are ARMv8.0 baseline; fcvtn rounds by FPCR (to nearest even by default).
  static R load_half(const std::uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
  static void store_half(std::uint16_t* p, R x) { vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(x))); }
};

}  // namespace
}  // namespace ringlm::kernels

#include "kernels/attention_impl.h"
#include "kernels/attention_dense_impl.h"

namespace ringlm::kernels {
using NeonF32 = AttnImpl<VecNeon>;
using NeonF16 = AttnImpl<VecNeon, std::uint16_t>;
const AttentionKernels kAttnNeon = {NeonF32::block, NeonF16::block, NeonF32::exp_n, NeonF32::store_f16,
                                    NeonF32::widen_f16, DenseImpl<VecNeon>::unit};
}  // namespace ringlm::kernels
#endif
