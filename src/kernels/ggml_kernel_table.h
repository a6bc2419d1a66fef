// Internal: per-ISA kernels behind ggml_quant_gemm.h. Each function computes rows [r0, r1)
// of y for every activation row (both planes when x.qs2 is set); `w` is the matrix start
// and `row_bytes` its row stride.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/q4k_packed.h"
#include "kernels/q6k_packed.h"
#include "kernels/iq4xs_packed.h"
#include "kernels/q3k_packed.h"
#include "kernels/q5k_packed.h"
#include "kernels/q8p16_packed.h"
#include "kernels/q8_act.h"

namespace ringlm::kernels {

using GgmlRowsFn = void (*)(const std::uint8_t* w, std::size_t row_bytes, std::size_t r0, std::size_t r1,
                            const Q8ActView& x, float* y, std::size_t ldy);

// Rows of q4kp16 groups [g0, g1) for all activation rows (q4k_packed.h).
using Q4KGroupsFn = void (*)(const Q4KPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                             std::size_t ldy);

// The same for q6kp16 (q6k_packed.h).
using Q6KGroupsFn = void (*)(const Q6KPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                             std::size_t ldy);

// The same for q8p16 (q8p16_packed.h).
using Q8P16GroupsFn = void (*)(const Q8P16Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                               std::size_t ldy);

// The same for iq4xsp16 (iq4xs_packed.h).
using Iq4XsGroupsFn = void (*)(const Iq4XsPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                               std::size_t ldy);

// The same for q3kp16 (q3k_packed.h).
using Q3KGroupsFn = void (*)(const Q3KPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                             std::size_t ldy);

// The same for q5kp16 (q5k_packed.h).
using Q5KGroupsFn = void (*)(const Q5KPacked& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                             std::size_t ldy);

struct GgmlKernelTable {
  GgmlRowsFn q8_0, q4_k, q5_k, q6_k;  // ggml blocks as stored
  Q4KGroupsFn q4k_groups;             // Q4_K repacked at load
  Q6KGroupsFn q6k_groups;             // Q6_K repacked at load
  Q8P16GroupsFn q8p16_groups;         // Q8_0 repacked at load
  Iq4XsGroupsFn iq4xs_groups;         // IQ4_XS repacked at load
  Q3KGroupsFn q3k_groups;             // Q3_K repacked at load
  Q5KGroupsFn q5k_groups;             // Q5_K repacked at load
};

extern const GgmlKernelTable kGgmlScalarKernels;
#if defined(__x86_64__)
extern const GgmlKernelTable kGgmlAvx2Kernels;
extern const GgmlKernelTable kGgmlAvx512Kernels;
extern const GgmlKernelTable kGgmlAvx512VnniKernels;
#endif

}  // namespace ringlm::kernels
