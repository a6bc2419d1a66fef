// ringlm's reference Gemma 4 decoder: float32 math over the stored (BF16/F16/F32) weights.
//
// API
//   auto model = ringlm::model::Model::load(dir);        // config.json + safetensors, mmapped
//   ringlm::model::Session s(model, {.context_tokens = 8192});
//   auto last = s.prefill(ids, positions);               // logits of the last token
//   s.prefill(ids, positions, LogitsMode::All, [&](size_t i, std::span<const float> row) {...});
//   auto next = s.decode(id, position);                  // one token, no allocation
//   s.truncate(n);  s.reset();                           // rollback / reuse, no reallocation
//
// Deferred LM head (guided decoding, where the grammar mask is known before the logits):
//   s.prefill(ids, positions, LogitsMode::Hidden);       // or s.decode_hidden(id, position)
//   auto row = s.head_logits_rows(allowed_ids);          // vocab-sized: those ids' logits, -inf elsewhere
//   auto all = s.head_logits();                          // or the whole head, as decode() returns it
// Every logit the subset calls return is bit-identical to the same entry of the full head
// (same kernel per row, same activation quantization for q4_0, same elementwise soft cap);
// their cost is the listed rows only (whole 16-row groups for a load-time q4_0 head, see
// head_row_granularity()), against all vocab rows for the full head.
//
// Positions are absolute (0-based) and must increase: each call continues after the highest
// position already in the cache (after truncate(n): from n). prefill() splits long spans
// into chunks of at most Session::kMaxChunk tokens. Returned spans stay valid until the next
// call on the session. A Model is immutable and may back several sessions; a Session is not
// thread-safe (it owns its KV cache and scratch buffers).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "backend/device.h"
#include "io/tensor.h"
#include "kernels/q4_packed.h"
#include "kernels/ref_parallel.h"
#include "kv/kv_cache.h"
#include "model/config.h"
#include "model/forward_scratch.h"
#include "model/greedy_head.h"
#include "model/lm_head.h"
#include "model/weights.h"

namespace ringlm::model {

class BatchForward;
namespace detail {
class ForwardPass;
class DeviceForward;
class DeviceHeadRows;
class DeviceKv;
struct DeviceWeights;
}

// stored: matmuls over the checkpoint's weights as stored (the float reference path; on a
//   converted directory: its q4_0 rows dequantized, float32 activations).
// q4_0: linear layers quantized to q4_0 at load, run by the w4a8 kernels (model/q4_weights.h).
enum class WeightFormat { stored, q4_0 };

// The defaults are the CLI's (`--weights q4_0 --activations int8x2`): a library user who
// sets nothing runs what `ringlm run` runs.
struct ModelOptions {
  int threads = 0;  // worker threads for matmuls; 0: kernels::default_thread_count()
  WeightFormat weights = WeightFormat::q4_0;
  // How the int8-activation kernels (packed q4_0, GGUF Q8_0/K-quants) quantize their input;
  // given to every matrix at load (kernels::WeightMatrix::activations).
  kernels::Q4Activations activations = kernels::Q4Activations::int8x2;
  // The float reference attention (one token at a time) instead of the tiled kernel: for
  // A/B comparisons of numerics and speed (the CLI sets it from RINGLM_ATTENTION=reference).
  bool reference_attention = false;
  // With WeightFormat::q4_0: copy a converted directory's q4p16 matrices from the file
  // mapping into anonymous huge-page memory at load (copy_packed_to_memory, q4_weights.h):
  // faster decode and prefill, at the cost of a copy and of pages no longer shared between
  // processes. False keeps them mapped (the CLI sets it from RINGLM_PACKED_WEIGHTS=mapped).
  bool packed_weights_in_memory = true;
  // The compute device the decoder runs on (docs/backends.md); null: the CPU kernels. The
  // weights are uploaded at load; sessions keep their KV there (src/cli opens the device).
  std::shared_ptr<backend::Device> device;
  // With a device: the most bytes one buffer of a weight matrix may take; a larger matrix is
  // split by rows over several buffers. 0: the device's own limit (maxStorageBufferRange).
  // Lowered only by tests, to run the split on small models.
  std::uint64_t device_weight_part_bytes = 0;
};

class Model {
 public:
  // Loads DIR/config.json and the safetensors checkpoint in DIR, or, when DIR is a packed
  // directory written by `ringlm convert` (model/packed_format.h), maps its q4p16 weights
  // and int8 sidecar tables. On a packed directory WeightFormat::stored runs the float path
  // over the dequantized q4_0 rows (the reference) and q4_0 the kernels, on copies of the
  // q4p16 matrices in huge-page memory unless packed_weights_in_memory is false.
  static std::shared_ptr<const Model> load(const std::filesystem::path& dir, const ModelOptions& options = {});
  // Builds a model over an already opened tensor source (any checkpoint format).
  static std::shared_ptr<const Model> from_source(ModelConfig config, std::unique_ptr<io::TensorSource> source,
                                                  const ModelOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const ModelOptions& options() const { return options_; }
  const ModelWeights& weights() const { return weights_; }
  const io::TensorSource& source() const { return *source_; }
  kernels::ParallelFor* pool() const { return pool_.get(); }
  // The weights on ModelOptions::device (null on the CPU).
  const detail::DeviceWeights* device_weights() const { return device_weights_.get(); }
  // The subset LM head on that device (null on the CPU); device steps run one at a time.
  detail::DeviceHeadRows* device_head_rows() const { return device_head_rows_.get(); }
  // Unmaps the resident pages of the embedding tables that are only gathered from (the
  // per-layer table, and the token table unless it is also the LM head) when they are read
  // from a file mapping. Sessions call it after each chunk's gathers, so those tables add
  // nothing to the resident set however many distinct tokens a long run sees.
  void release_gather_pages() const;
  // The load-time bounds of the greedy LM head (model/greedy_head.h); null when it does not
  // apply (the head is not packed q4_0 on int8x2 activations, or the model runs on a device).
  const GreedyHeadBounds* greedy_head_bounds() const { return greedy_bounds_ ? &*greedy_bounds_ : nullptr; }

 private:
  Model() = default;
  std::optional<GreedyHeadBounds> greedy_bounds_;
  ModelConfig config_;
  ModelOptions options_;
  std::unique_ptr<io::TensorSource> source_;
  ModelWeights weights_;
  std::vector<kernels::Q4PackedBuffer> quantized_;  // owns the q4_0 copies (WeightFormat::q4_0)
  std::unique_ptr<kernels::ParallelFor> pool_;
  std::shared_ptr<const detail::DeviceWeights> device_weights_;
  std::shared_ptr<detail::DeviceHeadRows> device_head_rows_;
  struct ByteRange {
    const void* data;
    std::size_t bytes;
  };
  std::vector<ByteRange> gather_only_;  // see release_gather_pages()
};

// None: no logits. Last: the last token's logits. All: every token's (through the callback).
// Hidden: like Last, but stops before the LM head, keeping the last token's final-normed
// hidden state for head_logits() / head_logits_rows() / head_logits_compact().
enum class LogitsMode { None, Last, All, Hidden };
using SessionSnapshot = kv::KvSnapshot;

// A soft-token embedding (an image or audio encoder's output, already projected to
// hidden_size) that replaces the scaled token embedding of the token at `position`. The
// token id there still selects the per-layer embedding row (Gemma 4 uses the pad id), and
// the per-layer projection reads the replaced row, as transformers' Gemma4Model does.
struct EmbeddingOverride {
  std::int64_t position = 0;
  const float* row = nullptr;  // [hidden_size], owned by the caller
};

struct SessionOptions {
  // Full-attention KV capacity in tokens; 0: min(8192, max_position_embeddings).
  int context_tokens = 0;
  // The KV-shared layers (Gemma 4's last num_kv_shared_layers) write no cache, so a prompt
  // token whose logits nobody asked for needs only the KV-owning layers: prefill() runs the
  // shared layers on the rows that want logits alone (LogitsMode::Last / Hidden: the last
  // token; All: every token). Exact: a row's result does not depend on the others (on the
  // q4_0 path it is bit-identical; see tests/model). On E2B that skips 20 of 35 layers,
  // ~70% of the prompt's matmul work. true runs every layer for every token (for tests).
  bool full_prefill = false;
  // KV cache element type: f16 (default: half the bytes per token, rounding error measured in
  // docs/attention.md) or f32.
  kv::KvType kv_type = kv::KvType::f16;
};

class Session {
 public:
  static constexpr int kMaxChunk = 64;
  static constexpr int kDefaultContext = 8192;
  using LogitsCallback = std::function<void(std::size_t index, std::span<const float> logits)>;

  Session(std::shared_ptr<const Model> model, const SessionOptions& options = {});
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  Session(Session&&) = default;  // keeps the model alive through its shared_ptr
  ~Session();

  // Runs ids[i] at positions[i]. LogitsMode::Last returns the last token's logits;
  // LogitsMode::All also calls on_logits(i, row) for every token in order. Throws
  // ringlm::Error (cache unchanged) on a bad id, a position past the capacity or one that
  // does not follow the cache.
  std::span<const float> prefill(std::span<const std::int32_t> ids, std::span<const std::int64_t> positions,
                                 LogitsMode mode = LogitsMode::Last, const LogitsCallback& on_logits = nullptr);
  // One token; returns its logits.
  std::span<const float> decode(std::int32_t id, std::int64_t position);
  // One token without the LM head (LogitsMode::Hidden).
  void decode_hidden(std::int32_t id, std::int64_t position);

  // The LM head over the kept hidden state of the last token run with LogitsMode::Last, All
  // or Hidden (until the next call that runs tokens, reset, truncate or restore; throws
  // ringlm::Error when there is none). Ids must be in [0, vocab); any order, repeats allowed.
  //
  // The full head: the row decode() returns for that token (in the logits buffer).
  std::span<float> head_logits();
  // A vocab-sized row holding the logits of `ids` and -inf everywhere else (in the logits
  // buffer; the caller may edit it in place, e.g. a sampler). Needs
  // reserve_head_rows(ids.size()) beforehand to stay allocation-free.
  std::span<float> head_logits_rows(std::span<const std::int32_t> ids);
  // out[i] = the logit of ids[i] (out.size() == ids.size()). Allocates nothing.
  void head_logits_compact(std::span<const std::int32_t> ids, std::span<float> out);
  // Sizes the scratch of head_logits_rows() for up to n ids, so later calls never allocate.
  void reserve_head_rows(std::size_t n);
  // Rows the LM head computes per requested row: 16 for a load-time q4_0 head on the w4a8
  // kernels (whole q4p16 groups), 1 for stored and GGUF block rows and on a device.
  std::size_t head_row_granularity() const { return device_kv_ ? 1 : head_rows_.granularity(); }
  // The final-normed hidden state the head_logits*() calls use ([hidden_size]).
  std::span<const float> head_input() const;

  // Rows prefill() uses instead of the token embeddings at their positions, sorted by
  // position, until the next call (an empty span clears them). The caller keeps the rows
  // alive while they are set. Positions without a token in a prefill call are ignored.
  void set_embedding_overrides(std::span<const EmbeddingOverride> rows) { overrides_ = rows; }

  void reset();
  // Keeps positions < n, so the next call may start at n. Throws if a sliding ring no
  // longer holds a position the next token needs (then nothing changes).
  void truncate(std::int64_t n);
  // Copies the sliding rings so restore() can return to this point after any amount of
  // further generation (as long as nothing below this point is truncated and rewritten).
  void snapshot(kv::KvSnapshot& out) const;
  void restore(const kv::KvSnapshot& snap);
  // Makes this session hold the first n positions of `src` (same model and context size),
  // copied instead of recomputed: a prompt prefix another session already ran. Throws
  // ringlm::Error (nothing changed) if src does not hold them all any more.
  void copy_prefix_from(const Session& src, std::int64_t n);
  // The KV of positions [from, from + n) as bytes (n * kv_position_bytes(); throws unless
  // held), and its inverse, which appends such bytes at from == next_position() as if those
  // tokens had been run here (engine/prefix_cache.h keeps prompt prefixes this way).
  std::size_t kv_position_bytes() const { return cache_.position_bytes(); }
  void export_kv(std::int64_t from, std::int64_t n, std::uint8_t* out) const;
  void import_kv(std::int64_t from, std::int64_t n, const std::uint8_t* in);
  // The lowest position the next call may use.
  std::int64_t next_position() const { return next_position_; }
  int context_capacity() const { return capacity_; }
  const Model& model() const { return *model_; }
  std::size_t kv_bytes() const { return cache_.bytes(); }
  // Read access to the cache `layer` attends (its own, or for a KV-shared layer its source's):
  // the slots with their absolute positions, sliding rings included, valid until the next
  // call that changes the cache. A drafter that reads the target's KV (the Gemma 4
  // assistant, model/assistant.h) attends it. Throws ringlm::Error on a device model (the KV
  // lives there and no mirror_kv covers the layer) or a layer out of range.
  kernels::KvSlots kv_view(int layer) const;
  // On a device session: brings host copies of the caches `layers` attend up to date (the
  // first call for a cache reads every held row, later calls only the rows written since,
  // a few KB a step), so that kv_view of those layers returns the copy. On a host session:
  // nothing (kv_view reads the cache itself). Allocates only when a layer is first named.
  void mirror_kv(std::span<const int> layers) const;

 private:
  friend class BatchForward;
  friend class detail::ForwardPass;
  void validate(std::span<const std::int32_t> ids, std::span<const std::int64_t> positions) const;
  // Runs one chunk (at most kMaxChunk tokens); final-normed hidden states for rows >=
  // first_logits_row (the last one kept in head_in_), and their logits when run_head.
  void forward_chunk(const std::int32_t* ids, const std::int64_t* positions, int n, int first_logits_row,
                     bool run_head);
  void require_hidden() const;
  // A device write (or removal) of positions >= from: mirror_kv reads them again.
  void mark_written(std::int64_t from) { mirror_stale_from_ = std::min(mirror_stale_from_, from); }

  std::shared_ptr<const Model> model_;
  const ModelConfig& cfg_;
  const ModelWeights& w_;
  kv::KvCache cache_;
  std::vector<int> cache_index_;  // per layer: the KV cache it reads
  int capacity_ = 0;
  bool full_prefill_ = false;
  std::int64_t next_position_ = 0;
  // mirror_kv's host copies: per mirrored cache, K/V halves and positions in its slot layout.
  struct KvMirror {
    int cache = -1;
    std::vector<std::uint16_t> k16, v16;
    std::vector<std::int32_t> pos;
  };
  // A cache of the device's state (what kv_view reads), so kept up to date by const callers.
  mutable std::vector<KvMirror> kv_mirrors_;
  mutable std::int64_t mirror_stale_from_ = 0;  // positions >= this may differ from the device's

  detail::ForwardScratch scratch_;  // per-token scratch, sized once for kMaxChunk tokens
  std::vector<float> logits_;       // [kMaxChunk][vocab]
  std::vector<float> head_in_;      // [hidden]: the last final-normed row
  bool hidden_valid_ = false;       // head_in_ belongs to the last token run
  LmHeadRows head_rows_;                          // the subset LM head and its scratch
  std::vector<float> head_values_;                // compact logits for head_logits_rows()
  std::span<const EmbeddingOverride> overrides_;  // see set_embedding_overrides()
  // On a device model: the KV lives there (cache_ keeps only the positions) and so does the
  // step, made on the first prefill (a session BatchForward advances needs none).
  std::unique_ptr<detail::DeviceKv> device_kv_;
  std::unique_ptr<detail::DeviceForward> device_step_;
  detail::DeviceForward& device_step();
};

}  // namespace ringlm::model
