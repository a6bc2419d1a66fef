// The decoder's step on a compute device (docs/backends.md), over the token rows of one or
// several sessions: Session::prefill runs one segment, model::BatchForward one per
// sequence. It owns the activations of up to max_rows token rows and the host-visible
// buffers a step's inputs and outputs pass through; each session's KV lives in its own
// DeviceKv. Internal to src/model.
//
// The step is ForwardPass's, op for op: every linear layer, norm and element-wise op runs
// once over all rows; the KV store and attention run per segment against that segment's
// cache. From the first KV-shared layer on, only the rows that want logits are kept (the
// prompt-row skip), moved to the front as ForwardPass::drop_prompt_rows does. Every device
// op computes a row from that row alone, and each matmul gets the segments' row counts as
// its row groups (the device picks a shader per group, by the group's size), so a
// segment's results are bit-identical to the same chunk run alone, at any batch size. Embedding rows (and soft-token overrides) and the rotary angles
// are prepared on the host; logits and the final-normed hidden rows come back there, where
// sampling, the grammar and the subset LM head stay. Nothing is allocated per step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/device.h"
#include "kv/kv_cache.h"
#include "model/device_kv.h"
#include "model/device_weights.h"

namespace ringlm::model {
class Model;
struct EmbeddingOverride;
}  // namespace ringlm::model

namespace ringlm::model::detail {

struct DeviceSegment {
  const std::int32_t* ids = nullptr;
  const std::int64_t* positions = nullptr;
  int n = 0;                 // token rows (at most Session::kMaxChunk)
  int first_logits_row = 0;  // rows >= this want the final hidden state (n: none)
  bool run_head = true;      // and their logits
  bool full_prefill = false; // run the KV-shared layers on every row
  std::span<const EmbeddingOverride> overrides;
  kv::KvCache* cache = nullptr;  // positions-only; gets the segment's positions
  const DeviceKv* kv = nullptr;
  const std::vector<int>* cache_index = nullptr;  // per layer: the cache it reads
  float* head_in = nullptr;  // [hidden]: receives the last final-normed row, when any is wanted
  // Null, or one flag per row (speculative verification, model::BatchItem::row_chunk): the
  // leading rows flagged 1 are the chunk plain decoding runs them in, every later row ran as
  // a one-token step there. The matmuls then get those as their row groups, so that each
  // verified row runs the shader (row or tiled, chosen by group size) its plain step runs.
  const std::uint8_t* row_chunk = nullptr;
  int logits_row = -1;       // set by run(): the segment's first row in `logits` (-1: none)
  // Internal: the segment's rows before and after the prompt-row skip, and its first
  // final-normed row in the head buffer.
  int first_row = 0, late_first = 0, late_n = 0, head_row = 0;
};

class DeviceForward {
 public:
  // Room for max_rows token rows per step, of which max_logits_rows may want logits.
  DeviceForward(const Model& model, int max_rows, int max_logits_rows);
  ~DeviceForward();  // frees the device buffers
  DeviceForward(const DeviceForward&) = delete;
  DeviceForward& operator=(const DeviceForward&) = delete;

  // Runs one step (the caller checked each segment's positions writable). Logits rows go
  // to `logits`, run_head segments in order (logits_row says where). If it throws (a device
  // failure), the segments' caches are undefined until their sessions reset.
  void run(std::span<DeviceSegment> segs, float* logits);
  // The full LM head (and soft cap) over n final-normed rows given by the host.
  void head(const float* rows, int n, float* logits);
  int max_rows() const { return max_rows_; }
  // The last step's final-normed rows [0, n) (run_head segments' logits rows first, in
  // logits order), e.g. for a drafter that reads the target's hidden state.
  void read_final_rows(float* out, int n) const;

 private:
  struct Phase;  // the rows one layer runs over (before or after the prompt-row skip)
  void prepare_inputs(std::span<DeviceSegment> segs, int rows);
  void record(std::span<DeviceSegment> segs, int rows, int head_rows);
  void compact_rows(std::span<const DeviceSegment> segs, int late_rows);
  void attention_block(int layer, const Phase& ph, std::span<const DeviceSegment> segs);
  void mlp_block(int layer, const Phase& ph);
  // Appends the matmul row groups of rows [from, to) of s (its row_chunk decides).
  static void push_groups(std::vector<int>& groups, const DeviceSegment& s, int from, int to);

  const Model& model_;
  const DeviceWeights& dw_;
  backend::Device& dev_;
  int max_rows_, max_logits_rows_;
  int n_caches_ = 0;  // KV caches per session (layers that own their KV)
  // Device activations, [rows][width] each (ple_all_: two halves, before and after the skip).
  backend::BufferId h_ = 0, a_ = 0, q_ = 0, k_ = 0, v_ = 0, attn_ = 0, o_ = 0, gate_ = 0, up_ = 0, ple_all_ = 0,
                    ple_g_ = 0;
  // Host-visible: float inputs (embedding rows | per-layer token rows | sliding and full
  // angles before, then after the skip), int inputs (positions | ring slots | full slots,
  // before, then after the skip | per segment and cache, the slots attention scans),
  // final-normed rows, logits.
  backend::BufferId in_f_ = 0, in_i_ = 0, head_ = 0, logits_ = 0;
  std::uint64_t off_ple_tok_ = 0, off_rope_[4] = {};
  bool any_drop_ = false;  // the last step skipped prompt rows
  std::vector<float> host_f_;
  std::vector<std::int32_t> host_i_, ids_;
  std::vector<std::int64_t> pos_;
  // The last step's matmul row groups (backend::Device::matmul): each segment's rows, its
  // rows after the prompt-row skip, its LM head rows; ones_: one row each (head()).
  std::vector<int> groups_early_, groups_late_, groups_head_, ones_;
};

}  // namespace ringlm::model::detail
