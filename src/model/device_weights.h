// The decoder's weights on a compute device (backend::Device), uploaded once when a Model is
// loaded with ModelOptions::device: every linear layer and the LM head in their host layout
// (q4p16 bytes as the model maps or repacked them, GGUF Q8_0 / Q4_1 / Q5_0 / Q5_1 / K-quant /
// IQ4 blocks exactly as the file stores them, or stored F32/F16/BF16 rows), the norm vectors
// in one float32 buffer. The embedding tables stay on the host: a step gathers its rows
// there and sends them with the step's inputs (docs/backends.md).
//
// A matrix larger than one device buffer may be (maxStorageBufferRange: 128 MiB to 4 GiB on
// common GPUs; E2B's tied LM head is 0.2-0.8 GB) is split by rows into parts of whole row
// groups, each its own buffer; device_matmul runs the parts into their row ranges of one
// output, so the forward pass never sees the split.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backend/device.h"
#include "model/config.h"
#include "model/weights.h"

namespace ringlm::model::detail {

struct DeviceMatrix {
  std::vector<backend::Weight> parts;   // consecutive row ranges (one part unless split)
  std::vector<std::int64_t> first_row;  // of each part
  std::int64_t rows = 0, cols = 0;
};

// out[t][r] = sum_c in[t][c] * W[r][c] for every input row t (out row stride m.rows), every
// part into its rows. The rows are consecutive groups, one per sequence (backend::Device::
// matmul: a row's bits depend on its own group's size only).
void device_matmul(backend::Device& dev, const DeviceMatrix& m, backend::Ref in, std::span<const int> groups,
                   backend::Ref out);

struct DeviceLayerWeights {
  DeviceMatrix q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, ple_gate, ple_projection;
  backend::Ref input_norm, post_attention_norm, pre_feedforward_norm, post_feedforward_norm, q_norm, k_norm,
      post_ple_norm;
};

struct DeviceWeights {
  std::shared_ptr<backend::Device> device;
  DeviceMatrix lm_head, ple_model_projection;
  backend::Ref ple_projection_norm, final_norm;
  std::vector<DeviceLayerWeights> layers;
  std::uint64_t bytes = 0;  // device memory they take
  std::size_t split_matrices = 0;  // matrices split over several buffers
};

// Uploads the weights; part_bytes (0: the device's limit) caps one buffer of a matrix.
// Throws ringlm::Error naming the device, the tensor and its type when a matrix's format has
// no device kernel (the GGUF types other than those above, int8 tables) or does not fit.
std::shared_ptr<const DeviceWeights> upload_weights(std::shared_ptr<backend::Device> device, const ModelWeights& w,
                                                   const ModelConfig& cfg, std::uint64_t part_bytes = 0);

// The device layout of a host matrix, or false when the device has no kernel for it.
bool device_layout(const WeightMatrix& m, backend::WeightLayout& out);

}  // namespace ringlm::model::detail
