#include "model/device_weights.h"

#include <algorithm>
#include <string>

#include "kernels/dequant_ggml.h"
#include "kernels/q4_packed.h"
#include "util/error.h"

namespace ringlm::model::detail {

bool device_layout(const WeightMatrix& m, backend::WeightLayout& out) {
  using L = backend::WeightLayout;
  if (m.packed) {  // the kernels' repacked layouts: only q4p16 has a device kernel
    out = L::q4p16;
    return m.dtype == io::DType::Q4_0;
  }
  switch (m.dtype) {
    case io::DType::F32: out = L::f32; return true;
    case io::DType::F16: out = L::f16; return true;
    case io::DType::BF16: out = L::bf16; return true;
    case io::DType::Q8_0: out = L::q8_0; return true;
    case io::DType::Q4_1: out = L::q4_1; return true;
    case io::DType::Q5_0: out = L::q5_0; return true;
    case io::DType::Q5_1: out = L::q5_1; return true;
    case io::DType::Q4_K: out = L::q4_k; return true;
    case io::DType::Q5_K: out = L::q5_k; return true;
    case io::DType::Q6_K: out = L::q6_k; return true;
    case io::DType::IQ4_NL: out = L::iq4_nl; return true;
    case io::DType::IQ4_XS: out = L::iq4_xs; return true;
    default: return false;
  }
}

void device_matmul(backend::Device& dev, const DeviceMatrix& m, backend::Ref in, std::span<const int> groups,
                   backend::Ref out) {
  for (std::size_t i = 0; i < m.parts.size(); ++i)
    dev.matmul(m.parts[i], in, groups, out.at(static_cast<std::uint64_t>(m.first_row[i])), m.rows);
}

namespace {

// Row granularity of a layout (q4p16: whole 16-row groups) and the bytes of one such unit.
struct RowUnit {
  std::int64_t rows;
  std::uint64_t bytes;
};
RowUnit row_unit(const WeightMatrix& m, backend::WeightLayout layout) {
  const std::uint64_t cols = static_cast<std::uint64_t>(m.cols);
  switch (layout) {
    case backend::WeightLayout::q4p16: return {kernels::kQ4GroupRows, kernels::q4_packed_bytes(kernels::kQ4GroupRows, cols)};
    case backend::WeightLayout::f32: return {1, 4 * cols};
    case backend::WeightLayout::f16:
    case backend::WeightLayout::bf16: return {1, 2 * cols};
    default: return {1, static_cast<std::uint64_t>(kernels::row_bytes(m.dtype, m.cols))};
  }
}

DeviceMatrix upload_matrix(backend::Device& dev, const WeightMatrix& m, const std::string& name,
                           std::uint64_t part_bytes, DeviceWeights& out) {
  backend::WeightLayout layout{};
  if (!device_layout(m, layout))
    fail_unsupported(dev.info().api, " device ", dev.info().index, " (", dev.info().name, "): ", name, " is ",
                     io::dtype_name(m.dtype), m.packed ? " (repacked)" : "",
                     ", which the device backend does not run (it runs F32, F16, BF16, Q4_0, Q8_0, Q4_1, Q5_0, "
                     "Q5_1, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS matrices)");
  DeviceMatrix d;
  d.rows = m.rows;
  d.cols = m.cols;
  const RowUnit unit = row_unit(m, layout);
  const std::uint64_t limit = part_bytes > 0 ? std::min(part_bytes, dev.max_buffer_bytes()) : dev.max_buffer_bytes();
  const std::int64_t units = (m.rows + unit.rows - 1) / unit.rows;
  const std::int64_t per_part = static_cast<std::int64_t>(std::min<std::uint64_t>(limit / unit.bytes, units));
  if (per_part < 1)
    fail_as(ErrorKind::resource_limit, dev.info().api, " device ", dev.info().index, " (", dev.info().name, "): ",
            name, " has ", unit.bytes, "-byte rows, over the ", limit, " bytes one buffer may hold");
  for (std::int64_t u = 0; u < units; u += per_part) {
    const std::int64_t first = u * unit.rows, rows = std::min(m.rows, (u + per_part) * unit.rows) - first;
    const std::uint64_t bytes = layout == backend::WeightLayout::q4p16
                                    ? kernels::q4_packed_bytes(static_cast<std::size_t>(rows), static_cast<std::size_t>(m.cols))
                                    : static_cast<std::uint64_t>(rows) * unit.bytes;
    const std::string what = units > per_part ? name + " rows " + std::to_string(first) + "-" +
                                                    std::to_string(first + rows - 1)
                                              : name;
    backend::Weight w{dev.create_buffer(bytes, backend::Memory::device, what), layout, rows, m.cols};
    // --activations int8 asks for int8 activations, as on the CPU; the LM head stays float32,
    // so that the subset head (matmul_rows) gives the full head's values bit for bit.
    w.int8_activations = m.activations == kernels::Q4Activations::int8 && name != "lm_head";
    d.parts.push_back(w);
    d.first_row.push_back(first);
    dev.write(w.buf, 0, m.data + static_cast<std::uint64_t>(u) * unit.bytes, bytes);
    out.bytes += bytes;
  }
  if (d.parts.size() > 1) ++out.split_matrices;
  return d;
}

// The norm vectors, packed into one buffer: the Ref of each, filled once every vector is known.
class NormTable {
 public:
  backend::Ref* add(const std::vector<float>& v, backend::Ref* slot) {
    if (v.empty()) return slot;  // absent (k_norm of a KV-shared layer): stays {0, 0}
    pending_.push_back({slot, data_.size()});
    data_.insert(data_.end(), v.begin(), v.end());
    return slot;
  }
  void upload(backend::Device& dev, std::uint64_t& total) {
    if (data_.empty()) return;
    const backend::BufferId buf = dev.create_buffer(data_.size() * 4, backend::Memory::device, "norm weights");
    dev.write(buf, 0, data_.data(), data_.size() * 4);
    total += data_.size() * 4;
    for (const auto& [slot, offset] : pending_) *slot = {buf, offset};
  }

 private:
  std::vector<float> data_;
  std::vector<std::pair<backend::Ref*, std::uint64_t>> pending_;
};

}  // namespace

std::shared_ptr<const DeviceWeights> upload_weights(std::shared_ptr<backend::Device> device, const ModelWeights& w,
                                                   const ModelConfig& cfg, std::uint64_t part_bytes) {
  auto out = std::make_shared<DeviceWeights>();
  out->device = device;
  backend::Device& dev = *device;
  std::uint64_t& total = out->bytes;
  NormTable norms;
  out->lm_head = upload_matrix(dev, w.lm_head, "lm_head", part_bytes, *out);
  if (cfg.ple_dim > 0) {
    out->ple_model_projection = upload_matrix(dev, w.ple_model_projection, "per_layer_model_projection", part_bytes, *out);
    norms.add(w.ple_projection_norm, &out->ple_projection_norm);
  }
  norms.add(w.final_norm, &out->final_norm);
  out->layers.resize(w.layers.size());
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& lw = w.layers[l];
    DeviceLayerWeights& d = out->layers[l];
    const std::string p = "layers." + std::to_string(l) + ".";
    d.q_proj = upload_matrix(dev, lw.q_proj, p + "q_proj", part_bytes, *out);
    if (cfg.layers[l].owns_kv) {
      d.k_proj = upload_matrix(dev, lw.k_proj, p + "k_proj", part_bytes, *out);
      d.v_proj = upload_matrix(dev, lw.v_proj, p + "v_proj", part_bytes, *out);
      norms.add(lw.k_norm, &d.k_norm);
    }
    d.o_proj = upload_matrix(dev, lw.o_proj, p + "o_proj", part_bytes, *out);
    d.gate_proj = upload_matrix(dev, lw.gate_proj, p + "gate_proj", part_bytes, *out);
    d.up_proj = upload_matrix(dev, lw.up_proj, p + "up_proj", part_bytes, *out);
    d.down_proj = upload_matrix(dev, lw.down_proj, p + "down_proj", part_bytes, *out);
    if (cfg.ple_dim > 0) {
      d.ple_gate = upload_matrix(dev, lw.ple_gate, p + "per_layer_input_gate", part_bytes, *out);
      d.ple_projection = upload_matrix(dev, lw.ple_projection, p + "per_layer_projection", part_bytes, *out);
      norms.add(lw.post_ple_norm, &d.post_ple_norm);
    }
    norms.add(lw.input_norm, &d.input_norm);
    norms.add(lw.post_attention_norm, &d.post_attention_norm);
    norms.add(lw.pre_feedforward_norm, &d.pre_feedforward_norm);
    norms.add(lw.post_feedforward_norm, &d.post_feedforward_norm);
    norms.add(lw.q_norm, &d.q_norm);
  }
  norms.upload(dev, total);
  return out;
}

}  // namespace ringlm::model::detail
