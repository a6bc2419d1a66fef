#include "model/lm_head.h"

#include "kernels/ggml_weight_matmul.h"
#include "kernels/q4_packed.h"
#include "kernels/ref_matmul.h"
#include "kernels/q4_weight_matmul.h"
#include "kernels/ref_ops.h"
#include "util/error.h"

namespace ringlm::model {

namespace {
// The full head runs such a matrix through q4_weight_matmul (see kernels::matmul), so the
// subset must run the same group kernel to give the same values.
bool runs_q4_groups(const kernels::WeightMatrix& w) {
  return w.dtype == io::DType::Q4_0 && w.packed && !w.float_path && w.activations != kernels::Q4Activations::f32;
}
// GGUF Q8_0 / K-quant heads run whole on the int8-activation kernels (ggml_weight_matmul.h),
// which have no row-list entry: a subset is the full head, read off at the listed rows.
bool runs_ggml_kernels(const kernels::WeightMatrix& w) {
  return kernels::ggml_quant_of(w.dtype).has_value() && w.activations != kernels::Q4Activations::f32;
}
}  // namespace

LmHeadRows::LmHeadRows(const kernels::WeightMatrix& head, float softcap) : head_(head), softcap_(softcap) {
  if (head.dtype == io::DType::Q4_0 && head.packed) {
    const std::size_t groups = (static_cast<std::size_t>(head.rows) + kernels::kQ4GroupRows - 1) / kernels::kQ4GroupRows;
    groups_.reserve(groups);
    group_used_.assign(groups, 0);
  }
}

std::size_t LmHeadRows::granularity() const {
  if (runs_ggml_kernels(head_)) return static_cast<std::size_t>(head_.rows);  // never cheaper than the full head
  return runs_q4_groups(head_) ? kernels::kQ4GroupRows : 1;
}

void LmHeadRows::compute(const float* h, std::span<const std::int32_t> ids, float* out, float* landing,
                         kernels::ParallelFor* pool) {
  for (std::int32_t id : ids)
    if (id < 0 || id >= head_.rows) fail("LM head row ", id, " is outside the vocabulary (", head_.rows, ")");
  if (runs_ggml_kernels(head_)) {
    kernels::matmul(head_, h, 1, landing, pool);
    for (std::size_t i = 0; i < ids.size(); ++i) out[i] = landing[ids[i]];
  } else if (runs_q4_groups(head_)) {
    groups_.clear();
    for (std::int32_t id : ids) {
      const std::uint32_t g = static_cast<std::uint32_t>(id) / kernels::kQ4GroupRows;
      if (!group_used_[g]) group_used_[g] = 1, groups_.push_back(g);
    }
    for (std::uint32_t g : groups_) group_used_[g] = 0;
    kernels::q4_weight_matmul_groups(head_, h, groups_.data(), groups_.size(), landing);
    for (std::size_t i = 0; i < ids.size(); ++i) out[i] = landing[ids[i]];
  } else {
    kernels::matmul_row_list(head_, h, ids.data(), ids.size(), out, pool);
  }
  // soft_cap is elementwise, so capping the listed values alone matches the full head.
  if (softcap_ > 0) kernels::soft_cap(out, static_cast<std::int64_t>(ids.size()), softcap_);
}

}  // namespace ringlm::model
