// AVX-512 kernels with VNNI: u8 x s8 dots of 4 in one vpdpbusd.
#include <cstring>

#include "kernels/kernel_table.h"

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
const KernelTable kAvx512VnniKernels = {
    quantize_act_row_avx512,
    q4_matmul_groups_avx512,
    i8_gemv_f32_avx512,
    i8_gemv_q8_avx512,
    gelu_mul_avx512,
    soft_cap_avx512,
};
}  // namespace ringlm::kernels
#endif
