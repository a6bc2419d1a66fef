#include "kernels/ggml_quant_gemm.h"

#include "kernels/dequant_blocks.h"
#include "kernels/dispatch.h"
#include "kernels/ggml_kernel_table.h"
#include "util/error.h"

namespace ringlm::kernels {

namespace {

// Rows per unit of work handed to the pool: small enough to balance, large enough that a
// unit is not dominated by the split (a Q4_K row of 1536 values is 864 bytes).
constexpr std::size_t kRowsPerUnit = 16;

const GgmlKernelTable& active_ggml_kernels() {
  switch (active_isa()) {
#if defined(__x86_64__)
    case Isa::avx2:
    case Isa::avxvnni: return kGgmlAvx2Kernels;  // the GGUF kernels have no AVX-VNNI form yet
    case Isa::avx512: return kGgmlAvx512Kernels;
    case Isa::avx512vnni:
    case Isa::amx: return kGgmlAvx512VnniKernels;  // no AMX form of the GGUF kernels
#endif
    default: return kGgmlScalarKernels;  // scalar; also aarch64 (no NEON version yet)
  }
}

GgmlRowsFn rows_fn(const GgmlKernelTable& k, GgmlQuant t) {
  switch (t) {
    case GgmlQuant::q8_0: return k.q8_0;
    case GgmlQuant::q4_k: return k.q4_k;
    case GgmlQuant::q5_k: return k.q5_k;
    case GgmlQuant::q6_k: return k.q6_k;
    case GgmlQuant::iq4_xs:  // repacked at load only (iq4xs_matmul, q3k_matmul)
    case GgmlQuant::q3_k: return nullptr;
  }
  return nullptr;
}

}  // namespace

const char* ggml_quant_name(GgmlQuant t) {
  switch (t) {
    case GgmlQuant::q8_0: return "Q8_0";
    case GgmlQuant::q4_k: return "Q4_K";
    case GgmlQuant::q5_k: return "Q5_K";
    case GgmlQuant::q6_k: return "Q6_K";
    case GgmlQuant::iq4_xs: return "IQ4_XS";
    case GgmlQuant::q3_k: return "Q3_K";
  }
  return "?";
}

std::size_t ggml_quant_block_elems(GgmlQuant t) { return t == GgmlQuant::q8_0 ? kQK : kQKK; }

std::size_t ggml_quant_block_bytes(GgmlQuant t) {
  switch (t) {
    case GgmlQuant::q8_0: return sizeof(BlockQ8_0);
    case GgmlQuant::q4_k: return sizeof(BlockQ4_K);
    case GgmlQuant::q5_k: return sizeof(BlockQ5_K);
    case GgmlQuant::q6_k: return sizeof(BlockQ6_K);
    case GgmlQuant::iq4_xs: return sizeof(BlockIQ4_XS);
    case GgmlQuant::q3_k: return sizeof(BlockQ3_K);
  }
  return 0;
}

void ggml_quant_matmul(const GgmlQuantMatrix& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool) {
  const std::size_t be = ggml_quant_block_elems(w.type);
  if (w.cols == 0 || w.cols % be != 0)
    fail("ggml_quant_matmul: ", ggml_quant_name(w.type), " row of ", w.cols, " values is not a multiple of ", be);
  if (w.cols != x.cols) fail("ggml_quant_matmul: weight has ", w.cols, " input features, activations ", x.cols);
  if (ldy < w.rows) fail("ggml_quant_matmul: output row stride ", ldy, " < weight rows ", w.rows);
  const GgmlRowsFn fn = rows_fn(active_ggml_kernels(), w.type);
  if (fn == nullptr) fail("ggml_quant_matmul: ", ggml_quant_name(w.type), " has no kernel over the file's blocks (repack it)");
  const std::size_t rb = w.row_bytes();
  if (pool == nullptr || pool->size() <= 1) return fn(w.data, rb, 0, w.rows, x, y, ldy);
  const std::size_t units = (w.rows + kRowsPerUnit - 1) / kRowsPerUnit;
  pool->parallel_for(units, [&](std::size_t u0, std::size_t u1, std::size_t) {
    const std::size_t r1 = u1 * kRowsPerUnit < w.rows ? u1 * kRowsPerUnit : w.rows;
    fn(w.data, rb, u0 * kRowsPerUnit, r1, x, y, ldy);
  });
}

void q4k_matmul(const Q4KPacked& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool) {
  if (w.cols != x.cols) fail("q4k_matmul: weight has ", w.cols, " input features, activations ", x.cols);
  if (ldy < w.rows) fail("q4k_matmul: output row stride ", ldy, " < weight rows ", w.rows);
  const Q4KGroupsFn fn = active_ggml_kernels().q4k_groups;
  if (pool == nullptr || pool->size() <= 1) return fn(w, 0, w.groups(), x, y, ldy);
  pool->parallel_for(w.groups(), [&](std::size_t g0, std::size_t g1, std::size_t) { fn(w, g0, g1, x, y, ldy); });
}

void q6k_matmul(const Q6KPacked& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool) {
  if (w.cols != x.cols) fail("q6k_matmul: weight has ", w.cols, " input features, activations ", x.cols);
  if (ldy < w.rows) fail("q6k_matmul: output row stride ", ldy, " < weight rows ", w.rows);
  const Q6KGroupsFn fn = active_ggml_kernels().q6k_groups;
  if (pool == nullptr || pool->size() <= 1) return fn(w, 0, w.groups(), x, y, ldy);
  pool->parallel_for(w.groups(), [&](std::size_t g0, std::size_t g1, std::size_t) { fn(w, g0, g1, x, y, ldy); });
}

void q8p16_matmul(const Q8P16Packed& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool) {
  if (w.cols != x.cols) fail("q8p16_matmul: weight has ", w.cols, " input features, activations ", x.cols);
  if (ldy < w.rows) fail("q8p16_matmul: output row stride ", ldy, " < weight rows ", w.rows);
  const Q8P16GroupsFn fn = active_ggml_kernels().q8p16_groups;
  if (pool == nullptr || pool->size() <= 1) return fn(w, 0, w.groups(), x, y, ldy);
  pool->parallel_for(w.groups(), [&](std::size_t g0, std::size_t g1, std::size_t) { fn(w, g0, g1, x, y, ldy); });
}

void iq4xs_matmul(const Iq4XsPacked& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool) {
  if (w.cols != x.cols) fail("iq4xs_matmul: weight has ", w.cols, " input features, activations ", x.cols);
  if (ldy < w.rows) fail("iq4xs_matmul: output row stride ", ldy, " < weight rows ", w.rows);
  const Iq4XsGroupsFn fn = active_ggml_kernels().iq4xs_groups;
  if (pool == nullptr || pool->size() <= 1) return fn(w, 0, w.groups(), x, y, ldy);
  pool->parallel_for(w.groups(), [&](std::size_t g0, std::size_t g1, std::size_t) { fn(w, g0, g1, x, y, ldy); });
}

void q3k_matmul(const Q3KPacked& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool) {
  if (w.cols != x.cols) fail("q3k_matmul: weight has ", w.cols, " input features, activations ", x.cols);
  if (ldy < w.rows) fail("q3k_matmul: output row stride ", ldy, " < weight rows ", w.rows);
  const Q3KGroupsFn fn = active_ggml_kernels().q3k_groups;
  if (pool == nullptr || pool->size() <= 1) return fn(w, 0, w.groups(), x, y, ldy);
  pool->parallel_for(w.groups(), [&](std::size_t g0, std::size_t g1, std::size_t) { fn(w, g0, g1, x, y, ldy); });
}

void q5k_matmul(const Q5KPacked& w, const Q8ActView& x, float* y, std::size_t ldy, ThreadPool* pool) {
  if (w.cols != x.cols) fail("q5k_matmul: weight has ", w.cols, " input features, activations ", x.cols);
  if (ldy < w.rows) fail("q5k_matmul: output row stride ", ldy, " < weight rows ", w.rows);
  const Q5KGroupsFn fn = active_ggml_kernels().q5k_groups;
  if (pool == nullptr || pool->size() <= 1) return fn(w, 0, w.groups(), x, y, ldy);
  pool->parallel_for(w.groups(), [&](std::size_t g0, std::size_t g1, std::size_t) { fn(w, g0, g1, x, y, ldy); });
}

}  // namespace ringlm::kernels
