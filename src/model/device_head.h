// The subset LM head of guided decoding on a compute device (docs/backends.md): the logits of
// a list of vocabulary rows for one final-normed hidden vector, computed by the device's
// row-list matmul (backend::Device::matmul_rows) and soft-capped there, so each value is
// bit-identical to the same entry of the device's full head (DeviceForward::head), and only
// the listed rows' logits come back to the host. One per device model (Model owns it): a
// few host-visible buffers sized for the whole vocabulary at load, so a call allocates
// nothing. Like every device step, calls come from one thread at a time. Internal to src/model.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/device.h"
#include "model/config.h"
#include "model/device_weights.h"

namespace ringlm::model::detail {

class DeviceHeadRows {
 public:
  DeviceHeadRows(const DeviceWeights& dw, const ModelConfig& cfg);
  ~DeviceHeadRows();  // frees the device buffers
  DeviceHeadRows(const DeviceHeadRows&) = delete;
  DeviceHeadRows& operator=(const DeviceHeadRows&) = delete;

  // out[i] = the soft-capped logit of ids[i] for the hidden vector h ([hidden_size]). Any
  // order, repeats allowed; throws ringlm::Error for an id outside the vocabulary.
  void compute(const float* h, std::span<const std::int32_t> ids, float* out);

  // The list capacity a call of n ids records its step for: powers of two from 16, at most
  // the vocabulary, so a guided run replays a handful of recorded steps whatever its counts.
  static int bucket(std::size_t n, int vocab);

 private:
  const DeviceWeights& dw_;
  backend::Device& dev_;
  int hidden_ = 0, vocab_ = 0;
  float softcap_ = 0.0f;
  backend::BufferId in_ = 0, ids_ = 0, out_ = 0;  // host-visible: hidden row, count + ids, logits
  std::vector<std::int32_t> host_ids_;            // [1 + vocab]
};

}  // namespace ringlm::model::detail
