// AVX-512 (F/BW/VL/DQ) kernels without VNNI: u8 x s8 dots via vpmaddubsw + vpmaddwd.
#include <cstring>

#include "kernels/kernel_table.h"

#if defined(__x86_64__)
#pragma GCC push_options
// GCC 12 reports its own _mm512_undefined_* helpers as maybe-uninitialized (false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")
#define RINGLM_AVX512_VNNI 0
#include "kernels/q4_kernels_avx512_impl.h"
#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace ringlm::kernels {
const KernelTable kAvx512Kernels = {
    quantize_act_row_avx512,
    q4_matmul_groups_avx512,
    i8_gemv_f32_avx512,
    i8_gemv_q8_avx512,
    gelu_mul_avx512,
    soft_cap_avx512,
    nullptr,  // prepack_act: rows read in place
};
}  // namespace ringlm::kernels
#endif
