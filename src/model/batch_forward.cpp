#include "model/batch_forward.h"

#include <algorithm>

#include "kernels/ref_matmul.h"
#include "kernels/ref_ops.h"
#include "model/device_forward.h"
#include "model/device_weights.h"
#include "util/error.h"

namespace ringlm::model {

BatchForward::BatchForward(std::shared_ptr<const Model> model, const BatchOptions& options)
    : model_(std::move(model)), options_(options) {
  if (options_.max_items < 1) fail("batch: at least one sequence per step is needed, got ", options_.max_items);
  if (options_.max_rows < options_.max_items)
    fail("batch: ", options_.max_rows, " rows per step cannot hold ", options_.max_items, " sequences");
  if (options_.max_logits_rows == 0) options_.max_logits_rows = options_.max_items;
  if (options_.max_logits_rows < options_.max_items)
    fail("batch: ", options_.max_logits_rows, " logits rows per step cannot hold ", options_.max_items, " sequences");
  if (model_->device_weights()) {  // the step runs on the device; the host scratch holds the deferred heads' rows
    device_ = std::make_unique<detail::DeviceForward>(*model_, options_.max_rows, options_.max_logits_rows);
    device_segs_.reserve(static_cast<std::size_t>(options_.max_items));
    scratch_.a.resize(static_cast<std::size_t>(options_.max_items) * model_->config().hidden_size);
  } else {
    scratch_.size_for(model_->config(), options_.max_rows);
    if (options_.greedy_head && model_->greedy_head_bounds()) {
      greedy_ = std::make_unique<GreedyHead>(model_->weights().lm_head,
                                             static_cast<float>(model_->config().final_logit_softcapping),
                                             *model_->greedy_head_bounds(), options_.max_logits_rows);
      scratch_.greedy_head = greedy_.get();
    }
  }
  segs_.reserve(static_cast<std::size_t>(options_.max_items));
  logits_row_.reserve(static_cast<std::size_t>(options_.max_items));
  logits_count_.reserve(static_cast<std::size_t>(options_.max_items));
  logits_.resize(static_cast<std::size_t>(options_.max_logits_rows) * static_cast<std::size_t>(model_->config().vocab_size));
  if (options_.keep_hidden_rows)
    hidden_.resize(static_cast<std::size_t>(options_.max_logits_rows) * static_cast<std::size_t>(model_->config().hidden_size));
}

void BatchForward::run(std::span<const BatchItem> items) {
  if (static_cast<int>(items.size()) > options_.max_items)
    fail("batch: ", items.size(), " sequences in one step; at most ", options_.max_items);
  std::size_t rows = 0, logit_rows = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const BatchItem& it = items[i];
    if (it.session == nullptr) fail("batch item ", i, ": no session");
    if (&it.session->model() != model_.get()) fail("batch item ", i, ": the session runs another model");
    if (it.mode == LogitsMode::All) fail("batch item ", i, ": LogitsMode::All is not supported in a batch");
    if (it.hidden_sum && it.mode != LogitsMode::None) fail("batch item ", i, ": pooled hidden states need LogitsMode::None");
    if (it.ids.empty()) fail("batch item ", i, ": no tokens");
    if (it.ids.size() > static_cast<std::size_t>(Session::kMaxChunk))
      fail("batch item ", i, ": ", it.ids.size(), " tokens; a step takes at most ", Session::kMaxChunk, " per sequence");
    if (it.logits_rows < 1 || it.logits_rows > static_cast<int>(it.ids.size()) ||
        (it.logits_rows > 1 && it.mode != LogitsMode::Last))
      fail("batch item ", i, ": ", it.logits_rows, " logits rows for ", it.ids.size(), " tokens");
    if (it.mode == LogitsMode::Last) logit_rows += static_cast<std::size_t>(it.logits_rows);
    for (std::size_t j = 0; j < i; ++j)
      if (items[j].session == it.session) fail("batch items ", j, " and ", i, " advance the same session");
    try {
      it.session->validate(it.ids, it.positions);
      it.session->cache_.check_writable(it.positions);
    } catch (const Error& e) {
      fail("batch item ", i, ": ", e.what());
    }
    rows += it.ids.size();
  }
  if (rows > static_cast<std::size_t>(options_.max_rows))
    fail("batch: ", rows, " token rows in one step; at most ", options_.max_rows);
  if (logit_rows > static_cast<std::size_t>(options_.max_logits_rows))
    fail("batch: ", logit_rows, " logits rows in one step; at most ", options_.max_logits_rows);

  if (device_) return run_on_device(items);
  segs_.clear();
  logits_row_.assign(items.size(), -1);
  logits_count_.assign(items.size(), 0);
  std::size_t row = 0;
  for (const BatchItem& it : items) {
    std::copy(it.ids.begin(), it.ids.end(), scratch_.ids.begin() + static_cast<std::ptrdiff_t>(row));
    std::copy(it.positions.begin(), it.positions.end(), scratch_.pos.begin() + static_cast<std::ptrdiff_t>(row));
    row += it.ids.size();
    detail::ForwardSegment seg;
    seg.session = it.session;
    seg.n = static_cast<int>(it.ids.size());
    seg.first_logits_row = it.mode == LogitsMode::None ? seg.n : it.mode == LogitsMode::Last ? seg.n - it.logits_rows
                                                                                            : seg.n - 1;
    seg.run_head = it.mode == LogitsMode::Last;
    seg.argmax_only = it.argmax_only;
    seg.row_chunk = it.row_chunk;
    if (it.hidden_sum) {  // every row's hidden state: no row may skip the KV-shared layers
      seg.first_logits_row = 0;
      seg.hidden_sum = it.hidden_sum;
    }
    segs_.push_back(seg);
    it.session->hidden_valid_ = false;
  }
  detail::ForwardPass(*model_, scratch_, segs_, logits_.data()).run();
  used_rows_ = 0;
  head_rows_ = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (segs_[i].logits_row >= 0) {
      logits_count_[i] = items[i].logits_rows;
      used_rows_ = std::max(used_rows_, segs_[i].logits_row + logits_count_[i]);
    }
    items[i].session->next_position_ = items[i].positions.back() + 1;
    logits_row_[i] = segs_[i].logits_row;
  }
  // The head rows' final-normed inputs are still at the front of the scratch (in logits row
  // order): copied out, since a later head_logits() call reuses that scratch.
  if (!hidden_.empty() && used_rows_ > 0)
    std::copy_n(scratch_.a.data(), static_cast<std::size_t>(used_rows_) * model_->config().hidden_size, hidden_.data());
}

void BatchForward::run_on_device(std::span<const BatchItem> items) {
  for (const BatchItem& it : items) {
    if (it.hidden_sum)
      fail_as(ErrorKind::unsupported, "batch: pooled hidden states (embeddings) do not run on the device yet; use the CPU");
    if (it.logits_rows < 1 || it.logits_rows > static_cast<int>(it.ids.size()))
      fail("batch: ", it.logits_rows, " logits rows for an item of ", it.ids.size(), " tokens");
  }
  device_segs_.clear();
  for (const BatchItem& it : items) {
    Session& s = *it.session;
    detail::DeviceSegment seg;
    seg.ids = it.ids.data();
    seg.positions = it.positions.data();
    seg.n = static_cast<int>(it.ids.size());
    seg.first_logits_row = it.mode == LogitsMode::None ? seg.n : it.mode == LogitsMode::Last ? seg.n - it.logits_rows : seg.n - 1;
    seg.row_chunk = it.row_chunk;
    s.mark_written(it.positions.front());
    seg.run_head = it.mode == LogitsMode::Last;
    seg.full_prefill = s.full_prefill_;
    seg.overrides = s.overrides_;
    seg.cache = &s.cache_;
    seg.kv = s.device_kv_.get();
    seg.cache_index = &s.cache_index_;
    seg.head_in = s.head_in_.data();
    device_segs_.push_back(seg);
    s.hidden_valid_ = false;
  }
  device_->run(device_segs_, logits_.data());
  used_rows_ = 0;
  head_rows_ = 0;
  logits_row_.assign(items.size(), -1);
  logits_count_.assign(items.size(), 0);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const detail::DeviceSegment& seg = device_segs_[i];
    if (seg.logits_row >= 0) logits_count_[i] = seg.n - seg.first_logits_row;
    if (seg.logits_row >= 0) used_rows_ = std::max(used_rows_, seg.logits_row + logits_count_[i]);
    if (seg.first_logits_row < seg.n) items[i].session->hidden_valid_ = true;
    items[i].session->next_position_ = items[i].positions.back() + 1;
    logits_row_[i] = seg.logits_row;
  }
  // The logits rows' final-normed inputs, as the host path keeps them (hidden()).
  if (!hidden_.empty()) device_->read_final_rows(hidden_.data(), used_rows_);
}

void BatchForward::head_logits(std::span<Session* const> sessions) {
  const int n = static_cast<int>(sessions.size());
  if (used_rows_ + n > options_.max_logits_rows)
    fail("batch: ", n, " deferred heads do not fit beside the step's ", used_rows_, " logits rows");
  const ModelConfig& cfg = model_->config();
  const std::size_t H = static_cast<std::size_t>(cfg.hidden_size), V = static_cast<std::size_t>(cfg.vocab_size);
  for (int j = 0; j < n; ++j) {
    Session& s = *sessions[static_cast<std::size_t>(j)];
    s.require_hidden();
    if (&s.model() != model_.get()) fail("batch: deferred head of a session of another model");
    std::copy(s.head_in_.begin(), s.head_in_.end(), scratch_.a.begin() + static_cast<std::ptrdiff_t>(j * H));
  }
  head_rows_ = n;
  if (n == 0) return;
  float* out = logits_.data() + static_cast<std::size_t>(used_rows_) * V;
  if (device_) return device_->head(scratch_.a.data(), n, out);
  kernels::matmul(model_->weights().lm_head, scratch_.a.data(), n, out, model_->pool());
  if (cfg.final_logit_softcapping > 0)
    kernels::soft_cap(out, static_cast<std::int64_t>(n) * cfg.vocab_size, static_cast<float>(cfg.final_logit_softcapping),
                      model_->pool());
}

std::span<float> BatchForward::head_row(std::size_t j) {
  if (static_cast<int>(j) >= head_rows_) fail("batch: no deferred head row ", j);
  const std::size_t V = static_cast<std::size_t>(model_->config().vocab_size);
  return {logits_.data() + (static_cast<std::size_t>(used_rows_) + j) * V, V};
}

std::span<const float> BatchForward::hidden(std::size_t i, int r) const {
  if (hidden_.empty()) fail("batch: hidden rows are not kept (BatchOptions::keep_hidden_rows)");
  if (i >= logits_row_.size() || logits_row_[i] < 0) fail("batch: item ", i, " of the last step has no logits");
  if (r < 0 || r >= logits_count_[i]) fail("batch: item ", i, " of the last step has no logits row ", r);
  const std::size_t H = static_cast<std::size_t>(model_->config().hidden_size);
  return {hidden_.data() + static_cast<std::size_t>(logits_row_[i] + r) * H, H};
}

std::span<float> BatchForward::logits(std::size_t i, int r) {
  if (i >= logits_row_.size() || logits_row_[i] < 0) fail("batch: item ", i, " of the last step has no logits");
  if (r < 0 || r >= logits_count_[i]) fail("batch: item ", i, " of the last step has no logits row ", r);
  const std::size_t V = static_cast<std::size_t>(model_->config().vocab_size);
  return {logits_.data() + static_cast<std::size_t>(logits_row_[i] + r) * V, V};
}

}  // namespace ringlm::model
