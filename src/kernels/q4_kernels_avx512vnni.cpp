// AVX-512 kernels with VNNI: u8 x s8 dots of 4 in one vpdpbusd.
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"

#if defined(__x86_64__)
#pragma GCC push_options
// GCC 12 reports its own _mm512_undefined_* helpers as maybe-uninitialized (false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#define RINGLM_AVX512_VNNI 1
#include "kernels/q4_kernels_avx512_impl.h"
#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace ringlm::kernels {
// Named entry points of this path, shared by the AMX table (q4_kernels_amx.cpp).
void quantize_act_row_avx512vnni(const float* x, std::size_t cols, std::int8_t* qs, float* d, std::int32_t* bias,
                                 std::int8_t* qs2, float* d2, std::int32_t* bias2) {
  quantize_act_row_avx512(x, cols, qs, d, bias, qs2, d2, bias2);
}
void q4_matmul_groups_avx512vnni(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                                 std::size_t ldy) {
  q4_matmul_groups_avx512(w, g0, g1, x, y, ldy);
}
void i8_gemv_f32_avx512vnni(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0,
                            std::size_t r1, const float* x, float* y) {
  i8_gemv_f32_avx512(w, scale, cols, r0, r1, x, y);
}
void i8_gemv_q8_avx512vnni(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0,
                           std::size_t r1, const Q8ActView& x, float* y) {
  i8_gemv_q8_avx512(w, scale, cols, r0, r1, x, y);
}

const void* prepack_act_avx512vnni(const Q8ActView& x, ThreadPool* pool) { return prepack_vnni_tiles(x, pool); }

const KernelTable kAvx512VnniKernels = {
    quantize_act_row_avx512,
    q4_matmul_groups_avx512,
    i8_gemv_f32_avx512,
    i8_gemv_q8_avx512,
    gelu_mul_avx512,
    soft_cap_avx512,
    prepack_act_avx512vnni,
};
}  // namespace ringlm::kernels
#endif
