#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <vector>

#include "io/safetensors.h"
#include "kernels/ref_matmul.h"
#include "kernels/ref_ops.h"
#include "kernels/thread_pool.h"
#include "model/device_forward.h"
#include "model/device_head.h"
#include "model/device_kv.h"
#include "model/device_weights.h"
#include "model/forward_pass.h"
#include "model/packed_format.h"
#include "model/packed_source.h"
#include "model/q4_weights.h"
#include "model/tensor_manifest.h"
#include "util/error.h"

namespace ringlm::model {

std::shared_ptr<const Model> Model::load(const std::filesystem::path& dir, const ModelOptions& options) {
  ModelConfig config = load_model_config(dir);
  if (is_packed_model_dir(dir)) {  // `ringlm convert` output: everything mapped, nothing to quantize
    auto source = open_packed_dir(dir, config);
    return from_source(std::move(config), std::move(source), options);
  }
  return from_source(std::move(config), io::open_safetensors_dir(dir), options);
}

std::shared_ptr<const Model> Model::from_source(ModelConfig config, std::unique_ptr<io::TensorSource> source,
                                                const ModelOptions& options) {
  std::shared_ptr<Model> m(new Model());
  m->config_ = std::move(config);
  m->options_ = options;
  m->source_ = std::move(source);
  m->weights_ = bind_weights(*m->source_, m->config_);
  if (options.threads > 0) kernels::set_default_thread_count(static_cast<std::size_t>(options.threads));
  if (options.weights != WeightFormat::q4_0) {
    // Stored weights that are already q4p16 (a converted directory): the float path over the
    // same dequantized rows, the reference for the kernels. (Marked before the GGUF repack:
    // GGUF blocks keep running as their --activations say.)
    for_each_matrix(m->weights_, MatrixSet::all, [](kernels::WeightMatrix& w) {
      if (w.dtype == io::DType::Q4_0 && w.packed) w.float_path = true;
    });
  }
  if (options.weights == WeightFormat::q4_0 && options.packed_weights_in_memory)
    m->quantized_ = copy_packed_to_memory(m->weights_, [src = m->source_.get()](const void* p, std::size_t n) {
      src->drop_pages(p, n);
    });
  // GGUF Q4_0/Q4_K/Q6_K/Q8_0/IQ4_XS/Q3_K/Q5_K -> the kernels' layouts; on a device only Q4_0 (its shader reads
  // q4p16), the other block types go up as the file stores them (model/device_weights.h).
  const RepackTypes repack = options.device ? RepackTypes::q4_0_only : RepackTypes::all;
  for (auto& b : repack_gguf_blocks(m->weights_, nullptr, repack)) m->quantized_.push_back(std::move(b));
  if (options.activations != kernels::Q4Activations::f32 && !options.device) {
    SlowBlocksInfo slow;
    for (auto& b : convert_slow_gguf_blocks(m->weights_, &slow)) m->quantized_.push_back(std::move(b));
    if (slow.matrices > 0)
      std::fprintf(stderr, "ringlm: %zu matrices of type %s have no fast kernel: converted to Q8_0 at load (%.1f MB "
                   "in the file, %.1f MB in memory; adds Q8_0 rounding; --activations f32 runs them exactly)\n",
                   slow.matrices, slow.types.c_str(), static_cast<double>(slow.file_bytes) / 1e6,
                   static_cast<double>(slow.memory_bytes) / 1e6);
  }
  if (options.weights == WeightFormat::q4_0)
    for (auto& b : quantize_weights_q4_0(m->weights_)) m->quantized_.push_back(std::move(b));
  for_each_matrix(m->weights_, MatrixSet::all, [&](kernels::WeightMatrix& w) { w.activations = options.activations; });
  if (options.device) m->device_weights_ = detail::upload_weights(options.device, m->weights_, m->config_,
                                                                   options.device_weight_part_bytes);
  if (m->device_weights_) m->device_head_rows_ = std::make_shared<detail::DeviceHeadRows>(*m->device_weights_, m->config_);
  m->pool_ = std::make_unique<kernels::ParallelFor>(options.threads > 0 ? options.threads
                                                                          : kernels::default_thread_count());
  // Tables the forward pass only gathers rows from, read where the source stores them.
  auto gather_only = [&](const char* name, const kernels::WeightMatrix& w) {
    const io::TensorView* v = m->source_->find(name);
    if (v && w.data == v->data && m->weights_.lm_head.data != v->data)
      m->gather_only_.push_back({v->data, static_cast<std::size_t>(v->nbytes)});
  };
  // The greedy head's weight bounds: one pass over the head's codes (~0.1 s for E2B on 2 cores).
  if (!m->device_weights_ && greedy_head_applies(m->weights_.lm_head))
    m->greedy_bounds_ = make_greedy_head_bounds(m->weights_.lm_head, m->pool_.get());
  gather_only(tensor_name(&ModelWeights::embed_tokens_ple), m->weights_.embed_tokens_ple);
  gather_only(tensor_name(&ModelWeights::embed_tokens), m->weights_.embed_tokens);
  return m;
}

void Model::release_gather_pages() const {
  for (const ByteRange& r : gather_only_) source_->drop_pages(r.data, r.bytes);
}

Session::Session(std::shared_ptr<const Model> model, const SessionOptions& options)
    : model_(std::move(model)), cfg_(model_->config()), w_(model_->weights()) {
  full_prefill_ = options.full_prefill;
  capacity_ = options.context_tokens == 0 ? std::min(kDefaultContext, cfg_.max_position_embeddings)
                                          : options.context_tokens;
  if (capacity_ < 1 || capacity_ > cfg_.max_position_embeddings)
    fail("context size ", capacity_, " must be between 1 and max_position_embeddings (",
         cfg_.max_position_embeddings, ")");
  std::vector<kv::LayerCacheSpec> specs;
  cache_index_.assign(cfg_.num_layers, -1);
  for (int l = 0; l < cfg_.num_layers; ++l) {
    const LayerConfig& L = cfg_.layers[l];
    if (!L.owns_kv) continue;
    kv::LayerCacheSpec s;
    s.type = options.kv_type;
    s.host_storage = model_->device_weights() == nullptr;
    s.n_kv_heads = L.n_kv_heads;
    s.head_dim = L.head_dim;
    if (L.kind == AttentionKind::Sliding) {
      s.window = cfg_.sliding_window;
      s.n_slots = cfg_.sliding_window + kMaxChunk;
    } else {
      s.n_slots = capacity_;
    }
    cache_index_[l] = static_cast<int>(specs.size());
    specs.push_back(s);
  }
  for (int l = 0; l < cfg_.num_layers; ++l)
    if (!cfg_.layers[l].owns_kv) cache_index_[l] = cache_index_[cfg_.layers[l].kv_source_layer];
  cache_ = kv::KvCache(specs);
  if (model_->device_weights()) {
    if (options.kv_type != kv::KvType::f16)
      fail_unsupported("the ", model_->device_weights()->device->info().api, " device keeps its KV cache in f16 (--kv-type f16)");
    device_kv_ = std::make_unique<detail::DeviceKv>(*model_->device_weights()->device, cache_);
  }

  scratch_.size_for(cfg_, kMaxChunk);
  logits_.resize(cfg_.vocab_size);  // one row; grows to kMaxChunk rows on the first LogitsMode::All
  head_in_.resize(cfg_.hidden_size);
  head_rows_ = LmHeadRows(w_.lm_head, static_cast<float>(cfg_.final_logit_softcapping));
}

Session::~Session() = default;

detail::DeviceForward& Session::device_step() {
  if (!device_step_) device_step_ = std::make_unique<detail::DeviceForward>(*model_, kMaxChunk, kMaxChunk);
  return *device_step_;
}

void Session::reset() {
  cache_.reset();
  if (device_kv_) device_kv_->sync_positions(cache_);
  mark_written(0);
  next_position_ = 0;
  hidden_valid_ = false;
}

void Session::truncate(std::int64_t n) {
  if (n < 0) fail("cannot truncate the session to ", n, " positions");
  if (n >= next_position_) return;
  cache_.truncate(n);
  if (device_kv_) device_kv_->sync_positions(cache_);
  mark_written(n);
  next_position_ = n;
  hidden_valid_ = false;
}

void Session::snapshot(kv::KvSnapshot& out) const {
  cache_.snapshot(next_position_, out);
  if (device_kv_) device_kv_->snapshot(cache_, out);
}

void Session::restore(const kv::KvSnapshot& snap) {
  if (device_kv_) device_kv_->restore(cache_, snap);  // checks the snapshot's geometry first
  cache_.restore(snap);
  if (device_kv_) device_kv_->sync_positions(cache_);
  mark_written(0);
  next_position_ = snap.end;
  hidden_valid_ = false;
}

void Session::copy_prefix_from(const Session& src, std::int64_t n) {
  if (src.model_ != model_) fail("cannot copy KV between sessions of different models");
  if (n > src.next_position_) fail("cannot copy a ", n, "-token prefix from a session holding ", src.next_position_);
  cache_.copy_prefix_from(src.cache_, n);  // checks everything first; positions only on a device
  if (device_kv_) {
    device_kv_->copy_prefix_from(*src.device_kv_, src.cache_, n);
    device_kv_->sync_positions(cache_);
    mark_written(0);
  }
  next_position_ = n;
  hidden_valid_ = false;
}

void Session::export_kv(std::int64_t from, std::int64_t n, std::uint8_t* out) const {
  if (from < 0 || n < 0 || from + n > next_position_)
    fail("cannot export KV positions ", from, "..", from + n - 1, " from a session holding ", next_position_);
  if (!device_kv_) return cache_.export_rows(from, n, out);
  for (int i = 0; i < cache_.size(); ++i) cache_.layer(i).check_holds(from, n);
  device_kv_->export_rows(cache_, from, n, out);
}

void Session::import_kv(std::int64_t from, std::int64_t n, const std::uint8_t* in) {
  if (from != next_position_) fail("KV import at position ", from, " does not follow the session's ", next_position_);
  if (n <= 0) return;
  std::vector<std::int64_t> pos(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) pos[static_cast<std::size_t>(i)] = from + i;
  cache_.check_writable(pos);
  cache_.import_rows(from, n, in);  // positions only on a device
  if (device_kv_) {
    device_kv_->import_rows(cache_, from, n, in);
    device_kv_->sync_positions(cache_);
    mark_written(from);
  }
  next_position_ = from + n;
  hidden_valid_ = false;
}

void Session::validate(std::span<const std::int32_t> ids, std::span<const std::int64_t> positions) const {
  if (ids.size() != positions.size()) fail("prefill: ", ids.size(), " ids but ", positions.size(), " positions");
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= cfg_.vocab_size) fail("token id ", ids[i], " is outside the vocabulary (", cfg_.vocab_size, ")");
    if (cfg_.ple_dim > 0 && ids[i] >= cfg_.ple_vocab_size)
      fail("token id ", ids[i], " is outside the per-layer embedding table (", cfg_.ple_vocab_size, ")");
    const std::int64_t p = positions[i];
    const std::int64_t prev = i == 0 ? next_position_ - 1 : positions[i - 1];
    if (p <= prev) fail("position ", p, " does not follow position ", prev, " (positions must increase; truncate to rewind)");
    if (p >= capacity_) fail("position ", p, " exceeds the context capacity of ", capacity_, " tokens (raise --ctx)");
  }
}

std::span<const float> Session::prefill(std::span<const std::int32_t> ids, std::span<const std::int64_t> positions,
                                        LogitsMode mode, const LogitsCallback& on_logits) {
  validate(ids, positions);
  if (ids.empty()) return {};
  if (mode == LogitsMode::All && logits_.size() < static_cast<std::size_t>(kMaxChunk) * cfg_.vocab_size)
    logits_.resize(static_cast<std::size_t>(kMaxChunk) * cfg_.vocab_size);
  const std::size_t V = cfg_.vocab_size;
  std::span<const float> last;
  hidden_valid_ = false;
  for (std::size_t start = 0; start < ids.size(); start += kMaxChunk) {
    const int n = static_cast<int>(std::min<std::size_t>(kMaxChunk, ids.size() - start));
    const bool final_chunk = start + n == ids.size();
    cache_.check_writable(positions.subspan(start, n));
    mark_written(positions[start]);
    int first_logits_row = n;  // none
    if (mode == LogitsMode::All) first_logits_row = 0;
    else if ((mode == LogitsMode::Last || mode == LogitsMode::Hidden) && final_chunk) first_logits_row = n - 1;
    forward_chunk(ids.data() + start, positions.data() + start, n, first_logits_row, mode != LogitsMode::Hidden);
    next_position_ = positions[start + n - 1] + 1;
    if (mode == LogitsMode::All) {
      for (int t = 0; t < n; ++t)
        if (on_logits) on_logits(start + t, std::span<const float>(logits_.data() + t * V, V));
      if (final_chunk) last = std::span<const float>(logits_.data() + (n - 1) * V, V);
    } else if (mode == LogitsMode::Last && final_chunk) {
      last = std::span<const float>(logits_.data(), V);
    }
  }
  return last;
}

std::span<const float> Session::decode(std::int32_t id, std::int64_t position) {
  return prefill(std::span<const std::int32_t>(&id, 1), std::span<const std::int64_t>(&position, 1), LogitsMode::Last);
}

void Session::decode_hidden(std::int32_t id, std::int64_t position) {
  prefill(std::span<const std::int32_t>(&id, 1), std::span<const std::int64_t>(&position, 1), LogitsMode::Hidden);
}

void Session::require_hidden() const {
  if (!hidden_valid_)
    fail("the session holds no hidden state for the LM head (run a token with LogitsMode::Hidden or Last first)");
}

kernels::KvSlots Session::kv_view(int layer) const {
  if (layer < 0 || layer >= cfg_.num_layers) fail("KV view: layer ", layer, " out of range (", cfg_.num_layers, " layers)");
  const int ci = cache_index_[static_cast<std::size_t>(layer)];
  kernels::KvSlots view = cache_.layer(ci).view();  // positions (all a device session's cache holds)
  if (!device_kv_) return view;
  for (const KvMirror& m : kv_mirrors_) {
    if (m.cache != ci) continue;
    if (mirror_stale_from_ < next_position_)
      fail("KV view: layer ", layer, " changed on the device since its host copy was made (call mirror_kv)");
    view.pos = m.pos.data();
    view.type = kernels::KvType::f16;
    view.k16 = m.k16.data();
    view.v16 = m.v16.data();
    view.k = view.v = nullptr;
    return view;
  }
  fail("the KV cache of a session on a device cannot be read on the host (no mirror_kv of layer ", layer, ")");
}

void Session::mirror_kv(std::span<const int> layers) const {
  if (!device_kv_) return;
  std::int64_t from = mirror_stale_from_;
  for (int layer : layers) {
    if (layer < 0 || layer >= cfg_.num_layers) fail("KV mirror: layer ", layer, " out of range (", cfg_.num_layers, " layers)");
    const int ci = cache_index_[static_cast<std::size_t>(layer)];
    if (std::any_of(kv_mirrors_.begin(), kv_mirrors_.end(), [ci](const KvMirror& m) { return m.cache == ci; })) continue;
    const kv::LayerCacheSpec& spec = cache_.layer(ci).spec();
    const std::size_t halves = static_cast<std::size_t>(spec.n_slots) * spec.n_kv_heads * spec.head_dim;
    kv_mirrors_.push_back({ci, std::vector<std::uint16_t>(halves), std::vector<std::uint16_t>(halves),
                           std::vector<std::int32_t>(static_cast<std::size_t>(spec.n_slots), -1)});
    from = 0;  // a new copy reads every held row (and the others again: simpler, once)
  }
  for (KvMirror& m : kv_mirrors_) {
    const kv::LayerCache& lc = cache_.layer(m.cache);
    // Only the positions a cache can still hold: a ring its last n_slots.
    const std::int64_t first = std::max(from, lc.is_ring() ? next_position_ - lc.spec().n_slots : std::int64_t{0});
    if (next_position_ > first)
      device_kv_->read_slots(cache_, m.cache, first, next_position_ - first, m.k16.data(), m.v16.data());
    const kernels::KvSlots v = lc.view();
    std::copy_n(v.pos, lc.spec().n_slots, m.pos.begin());
  }
  mirror_stale_from_ = next_position_;
}

std::span<const float> Session::head_input() const {
  require_hidden();
  return head_in_;
}

std::span<float> Session::head_logits() {
  require_hidden();
  if (device_kv_) {  // the head's weights are on the device: one step there
    device_step().head(head_in_.data(), 1, logits_.data());
    return {logits_.data(), static_cast<std::size_t>(cfg_.vocab_size)};
  }
  kernels::matmul(w_.lm_head, head_in_.data(), 1, logits_.data(), model_->pool());
  if (cfg_.final_logit_softcapping > 0)
    kernels::soft_cap(logits_.data(), cfg_.vocab_size, static_cast<float>(cfg_.final_logit_softcapping), model_->pool());
  return {logits_.data(), static_cast<std::size_t>(cfg_.vocab_size)};
}

void Session::reserve_head_rows(std::size_t n) {
  if (head_values_.size() < n) head_values_.resize(n);
}

std::span<float> Session::head_logits_rows(std::span<const std::int32_t> ids) {
  require_hidden();
  reserve_head_rows(ids.size());
  // Compact first: a q4_0 head lands whole groups in the logits buffer before it is cleared.
  if (device_kv_) model_->device_head_rows()->compute(head_in_.data(), ids, head_values_.data());
  else head_rows_.compute(head_in_.data(), ids, head_values_.data(), logits_.data(), model_->pool());
  std::fill_n(logits_.data(), cfg_.vocab_size, -std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < ids.size(); ++i) logits_[ids[i]] = head_values_[i];
  return {logits_.data(), static_cast<std::size_t>(cfg_.vocab_size)};
}

void Session::head_logits_compact(std::span<const std::int32_t> ids, std::span<float> out) {
  require_hidden();
  if (out.size() != ids.size()) fail("head_logits_compact: ", ids.size(), " ids but room for ", out.size(), " logits");
  if (device_kv_) return model_->device_head_rows()->compute(head_in_.data(), ids, out.data());
  head_rows_.compute(head_in_.data(), ids, out.data(), logits_.data(), model_->pool());
}

void Session::forward_chunk(const std::int32_t* ids, const std::int64_t* positions, int n, int first_logits_row,
                            bool run_head) {
  if (device_kv_) {
    detail::DeviceSegment seg;
    seg.ids = ids;
    seg.positions = positions;
    seg.n = n;
    seg.first_logits_row = first_logits_row;
    seg.run_head = run_head;
    seg.full_prefill = full_prefill_;
    seg.overrides = overrides_;
    seg.cache = &cache_;
    seg.kv = device_kv_.get();
    seg.cache_index = &cache_index_;
    seg.head_in = head_in_.data();
    device_step().run(std::span<detail::DeviceSegment>(&seg, 1), logits_.data());
    if (first_logits_row < n) hidden_valid_ = true;
    return;
  }
  std::copy_n(ids, n, scratch_.ids.data());
  std::copy_n(positions, n, scratch_.pos.data());
  detail::ForwardSegment seg;
  seg.session = this;
  seg.n = n;
  seg.first_logits_row = first_logits_row;
  seg.run_head = run_head;
  detail::ForwardPass(*model_, scratch_, std::span<detail::ForwardSegment>(&seg, 1), logits_.data()).run();
}

}  // namespace ringlm::model
