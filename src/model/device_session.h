// One Session's state on a compute device and the decoder step over backend::Device
// (docs/backends.md): the KV caches (f16, on the device), the activations of up to
// Session::kMaxChunk token rows, and the host-visible buffers a step's inputs and outputs
// pass through. Internal to src/model: Session forwards its chunks here when its Model was
// loaded with a device (ModelOptions::device).
//
// The step is the one ForwardPass runs for a single segment, op for op, with the KV-shared
// layers' prompt-row skip done by moving the first row instead of the rows. The embedding
// rows (and soft-token overrides) and the rotary angles are prepared on the host; logits and
// the final-normed hidden rows come back to the host, where sampling, the grammar and the
// subset LM head stay. Nothing is allocated per step.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/device.h"
#include "kv/kv_cache.h"
#include "model/device_weights.h"

namespace ringlm::model {
class Model;
struct EmbeddingOverride;
}  // namespace ringlm::model

namespace ringlm::model::detail {

class DeviceSession {
 public:
  // `cache` is the session's positions-only cache (kv::LayerCacheSpec::host_storage false):
  // its layer i is device cache i.
  DeviceSession(const Model& model, const kv::KvCache& cache, int max_rows);
  ~DeviceSession();  // frees the device buffers
  DeviceSession(const DeviceSession&) = delete;
  DeviceSession& operator=(const DeviceSession&) = delete;

  struct Step {
    const std::int32_t* ids;
    const std::int64_t* positions;
    int n;
    int first_logits_row;  // rows >= this want the final hidden state (n: none)
    bool run_head;         // and their logits
    bool full_prefill;     // run the KV-shared layers on every row
    std::span<const EmbeddingOverride> overrides;
  };
  // Runs one chunk. `cache` gets the chunk's positions (the caller checked them writable).
  // Writes the logits rows (n - first_logits_row of them, when run_head) to `logits` and the
  // last final-normed row to `head_in`. If it throws (a device failure), the session's
  // cache state is undefined until reset().
  void forward(const Step& step, kv::KvCache& cache, const std::vector<int>& cache_index, float* logits,
               float* head_in);
  // Makes the device's slot positions those of `cache` (after reset or truncate).
  void sync_positions(const kv::KvCache& cache);

 private:
  void prepare_inputs(const Step& step, kv::KvCache& cache);
  void record(const Step& step, const kv::KvCache& cache, const std::vector<int>& cache_index);
  void attention_block(int layer, int row0, int rows, const kv::KvCache& cache, const std::vector<int>& cache_index);
  void mlp_block(int layer, int row0, int rows);

  const Model& model_;
  const DeviceWeights& dw_;
  backend::Device& dev_;
  int max_rows_;
  std::vector<backend::KvLayer> kv_;
  // Device activations, [rows][width] each.
  backend::BufferId h_ = 0, a_ = 0, q_ = 0, k_ = 0, v_ = 0, attn_ = 0, o_ = 0, gate_ = 0, up_ = 0, ple_all_ = 0,
                    ple_g_ = 0;
  // Host-visible: float inputs (embedding rows | per-layer token rows | sliding angles | full
  // angles), int inputs (positions | ring slots | full slots), final-normed rows, logits.
  backend::BufferId in_f_ = 0, in_i_ = 0, head_ = 0, logits_ = 0;
  std::uint64_t off_ple_tok_ = 0, off_rope_s_ = 0, off_rope_f_ = 0;
  std::vector<float> host_f_;
  std::vector<std::int32_t> host_i_;
};

}  // namespace ringlm::model::detail
