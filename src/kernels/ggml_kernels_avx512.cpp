// ggml_quant_gemm.h kernels for AVX-512 F/BW/VL/DQ (256-bit forms; vpmaddubsw); the code is ggml_kernels_x86_impl.h.
#include <cstring>

#include "kernels/dequant_ggml.h"
#include "kernels/ggml_kernel_table.h"

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")
#define RINGLM_GGML_VNNI 0
#include "kernels/ggml_kernels_x86_impl.h"
#pragma GCC pop_options

namespace ringlm::kernels {
const GgmlKernelTable kGgmlAvx512Kernels = {
    rows<dot_q8_0>,
    rows<dot_k4or5<false>>,
    rows<dot_k4or5<true>>,
    rows<dot_q6_k>,
};
}  // namespace ringlm::kernels
#endif
