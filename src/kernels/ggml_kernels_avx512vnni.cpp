// ggml_quant_gemm.h kernels for AVX-512 VNNI (256-bit vpdpbusd); the code is ggml_kernels_x86_impl.h.
#include <cstring>

#include "kernels/dequant_ggml.h"
#include "kernels/ggml_kernel_table.h"

#if defined(__x86_64__)
#pragma GCC push_options
// GCC 12 reports its own _mm512_undefined_* helpers as maybe-uninitialized (false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#define RINGLM_GGML_VNNI 1
#include "kernels/ggml_kernels_x86_impl.h"
#define RINGLM_GGML_AVX512 1
#include "kernels/q4k_kernels_x86_impl.h"
#include "kernels/q6k_kernels_x86_impl.h"
#include "kernels/q8p16_kernels_x86_impl.h"
#include "kernels/iq4xs_kernels_x86_impl.h"
#include "kernels/q3k_kernels_x86_impl.h"
#include "kernels/q5k_kernels_x86_impl.h"
#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace ringlm::kernels {
const GgmlKernelTable kGgmlAvx512VnniKernels = {
    rows<Q8_0>,
    rows<QK45<false>>,
    rows<QK45<true>>,
    rows<Q6K>,
    q4k_groups,
    q6k_groups,
    q8p16_groups,
    iq4xs_groups,
    q3k_groups,
    q5k_groups,
};
}  // namespace ringlm::kernels
#endif
