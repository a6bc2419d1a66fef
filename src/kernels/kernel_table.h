// Internal: the per-ISA kernel entry points behind the public API (q4_gemm.h, q8_act.h,
// i8_rows.h). Each ISA file fills one KernelTable; dispatch.cpp picks one at run time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/q4_packed.h"
#include "kernels/q8_act.h"

namespace ringlm::kernels {

class ThreadPool;

struct KernelTable {
  // One activation row f32 -> q8 act (see q8_act.h); bit-identical to quantize_act_row_ref.
  // The second plane is written when qs2 is not null.
  void (*quantize_act_row)(const float* x, std::size_t cols, std::int8_t* qs, float* d, std::int32_t* bias,
                           std::int8_t* qs2, float* d2, std::int32_t* bias2);
  // y[m * ldy + n] = W[n, :] . x[m, :] for the rows n of groups [g0, g1) and all x rows
  // (both activation planes when x.qs2 is set).
  void (*q4_matmul_groups)(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x,
                           float* y, std::size_t ldy);
  // y[n] = scale[n] * (W[n, :] . x) for rows [r0, r1) of int8 rows W [*, cols], x in f32.
  void (*i8_gemv_f32)(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0,
                      std::size_t r1, const float* x, float* y);
  // Same with x as one q8 act row (x.rows >= 1, row 0 used).
  void (*i8_gemv_q8)(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0,
                     std::size_t r1, const Q8ActView& x, float* y);
  // out[i] = gelu_tanh(gate[i]) * up[i] and x[i] = cap * tanh(x[i] / cap) (ref_ops.h),
  // bit-identical to the scalar forms on x86.
  void (*gelu_mul)(const float* gate, const float* up, std::size_t n, float* out);
  void (*soft_cap)(float* x, std::size_t n, float cap);
  // Packs x (rows >= 2) into the layout q4_matmul_groups reads for several rows, in a buffer
  // of the calling thread kept until its next call; returns it for Q8ActView::tile_pack.
  // Null where the path reads the rows in place. With a pool (may be null) the tiles are
  // packed in parallel (each tile by one thread: the same bytes as serially).
  const void* (*prepack_act)(const Q8ActView& x, ThreadPool* pool);
};

// The element-wise activations per path (ref_ops.cpp: scalar; activation_kernels_avx2.cpp, activation_kernels_avx512.cpp).
void gelu_mul_scalar(const float* gate, const float* up, std::size_t n, float* out);
void soft_cap_scalar(float* x, std::size_t n, float cap);
#if defined(__x86_64__)
void gelu_mul_avx2(const float* gate, const float* up, std::size_t n, float* out);
void soft_cap_avx2(float* x, std::size_t n, float cap);
void gelu_mul_avx512(const float* gate, const float* up, std::size_t n, float* out);
void soft_cap_avx512(float* x, std::size_t n, float cap);
#endif
#if defined(__aarch64__)
// Shared by the neon and neon-dotprod tables (q4_kernels_neon.cpp).
void quantize_act_row_neon(const float* x, std::size_t cols, std::int8_t* qs, float* d, std::int32_t* bias,
                           std::int8_t* qs2, float* d2, std::int32_t* bias2);
void i8_gemv_f32_neon(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0, std::size_t r1,
                      const float* x, float* y);
#endif

#if defined(__x86_64__)
// The AVX-512 VNNI path's entry points (q4_kernels_avx512vnni.cpp), which the AMX table
// reuses for everything but the multi-row q4 GEMM.
void quantize_act_row_avx512vnni(const float* x, std::size_t cols, std::int8_t* qs, float* d, std::int32_t* bias,
                                 std::int8_t* qs2, float* d2, std::int32_t* bias2);
void q4_matmul_groups_avx512vnni(const Q4Packed& w, std::size_t g0, std::size_t g1, const Q8ActView& x, float* y,
                                 std::size_t ldy);
const void* prepack_act_avx512vnni(const Q8ActView& x, ThreadPool* pool);
void i8_gemv_f32_avx512vnni(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0,
                            std::size_t r1, const float* x, float* y);
void i8_gemv_q8_avx512vnni(const std::int8_t* w, const float* scale, std::size_t cols, std::size_t r0,
                           std::size_t r1, const Q8ActView& x, float* y);
// Whether the OS lets this process use the AMX tile registers (Linux: asks once with
// arch_prctl(ARCH_REQ_XCOMP_PERM)); false where the CPU lacks AMX-INT8.
bool amx_os_ready();
#endif

extern const KernelTable kScalarKernels;
#if defined(__x86_64__)
extern const KernelTable kAvx2Kernels;
extern const KernelTable kAvxVnniKernels;
extern const KernelTable kAvx512Kernels;
extern const KernelTable kAvx512VnniKernels;
extern const KernelTable kAmxKernels;
#endif
#if defined(__aarch64__)
extern const KernelTable kNeonKernels;
extern const KernelTable kNeonDotprodKernels;
#endif

const KernelTable& active_kernels();

}  // namespace ringlm::kernels
