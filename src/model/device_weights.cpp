#include "model/device_weights.h"

#include <string>

#include "kernels/q4_packed.h"
#include "util/error.h"

namespace ringlm::model::detail {

namespace {

backend::Weight upload_matrix(backend::Device& dev, const WeightMatrix& m, const std::string& name,
                              std::uint64_t& total) {
  backend::Weight w;
  w.rows = m.rows;
  w.cols = m.cols;
  std::uint64_t bytes = 0;
  const std::uint64_t n = static_cast<std::uint64_t>(m.rows) * static_cast<std::uint64_t>(m.cols);
  if (m.dtype == io::DType::Q4_0 && m.packed) {
    w.layout = backend::WeightLayout::q4p16;
    bytes = kernels::q4_packed_bytes(static_cast<std::size_t>(m.rows), static_cast<std::size_t>(m.cols));
  } else if (m.dtype == io::DType::F32) {
    w.layout = backend::WeightLayout::f32;
    bytes = 4 * n;
  } else if (m.dtype == io::DType::F16 || m.dtype == io::DType::BF16) {
    w.layout = m.dtype == io::DType::F16 ? backend::WeightLayout::f16 : backend::WeightLayout::bf16;
    bytes = 2 * n;
  } else {
    fail_unsupported(dev.info().api, " device ", dev.info().index, " (", dev.info().name, "): ", name, " is ",
                     io::dtype_name(m.dtype), m.packed ? " (repacked)" : "",
                     ", which the device backend does not run yet (it runs q4_0, F32, F16 and BF16 matrices)");
  }
  w.buf = dev.create_buffer(bytes, backend::Memory::device, name);
  dev.write(w.buf, 0, m.data, bytes);
  total += bytes;
  return w;
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
                                                   const ModelConfig& cfg) {
  auto out = std::make_shared<DeviceWeights>();
  out->device = device;
  backend::Device& dev = *device;
  std::uint64_t& total = out->bytes;
  NormTable norms;
  out->lm_head = upload_matrix(dev, w.lm_head, "lm_head", total);
  if (cfg.ple_dim > 0) {
    out->ple_model_projection = upload_matrix(dev, w.ple_model_projection, "per_layer_model_projection", total);
    norms.add(w.ple_projection_norm, &out->ple_projection_norm);
  }
  norms.add(w.final_norm, &out->final_norm);
  out->layers.resize(w.layers.size());
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& lw = w.layers[l];
    DeviceLayerWeights& d = out->layers[l];
    const std::string p = "layers." + std::to_string(l) + ".";
    d.q_proj = upload_matrix(dev, lw.q_proj, p + "q_proj", total);
    if (cfg.layers[l].owns_kv) {
      d.k_proj = upload_matrix(dev, lw.k_proj, p + "k_proj", total);
      d.v_proj = upload_matrix(dev, lw.v_proj, p + "v_proj", total);
      norms.add(lw.k_norm, &d.k_norm);
    }
    d.o_proj = upload_matrix(dev, lw.o_proj, p + "o_proj", total);
    d.gate_proj = upload_matrix(dev, lw.gate_proj, p + "gate_proj", total);
    d.up_proj = upload_matrix(dev, lw.up_proj, p + "up_proj", total);
    d.down_proj = upload_matrix(dev, lw.down_proj, p + "down_proj", total);
    if (cfg.ple_dim > 0) {
      d.ple_gate = upload_matrix(dev, lw.ple_gate, p + "per_layer_input_gate", total);
      d.ple_projection = upload_matrix(dev, lw.ple_projection, p + "per_layer_projection", total);
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
