// ggml_quant_gemm.h kernels for AVX2 + FMA + F16C; the code is ggml_kernels_x86_impl.h.
#include <cstring>

#include "kernels/dequant_ggml.h"
#include "kernels/ggml_kernel_table.h"

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define RINGLM_GGML_VNNI 0
#include "kernels/ggml_kernels_x86_impl.h"
#define RINGLM_GGML_AVX512 0
#include "kernels/q4k_kernels_x86_impl.h"
#include "kernels/q6k_kernels_x86_impl.h"
#include "kernels/q8p16_kernels_x86_impl.h"
#include "kernels/iq4xs_kernels_x86_impl.h"
#include "kernels/q3k_kernels_x86_impl.h"
#include "kernels/q5k_kernels_x86_impl.h"
#pragma GCC pop_options

namespace ringlm::kernels {
const GgmlKernelTable kGgmlAvx2Kernels = {
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
