#include "model/device_forward.h"

#include <algorithm>
#include <cmath>

#include "kernels/ref_matmul.h"
#include "kernels/ref_ops.h"
#include "model/model.h"
#include "util/error.h"

namespace ringlm::model::detail {

namespace {
using backend::Memory;
using backend::Ref;
std::uint64_t at(int row, int width) { return static_cast<std::uint64_t>(row) * static_cast<std::uint64_t>(width); }
}  // namespace

// The rows a layer runs over: all of the step's (early) or those left after the prompt-row
// skip (late), with where their inputs are.
struct DeviceForward::Phase {
  bool late = false;
  int rows = 0;
  std::uint64_t rope_s = 0, rope_f = 0;      // words in in_f_
  std::uint64_t pos = 0, ring = 0, full = 0;  // words in in_i_
  std::uint64_t ple = 0;                      // words in ple_all_ of row 0
  std::span<const int> groups;                // the rows of each segment that has any (matmul groups)
  int first(const DeviceSegment& s) const { return late ? s.late_first : s.first_row; }
  int count(const DeviceSegment& s) const { return late ? s.late_n : s.n; }
};

DeviceForward::DeviceForward(const Model& model, int max_rows, int max_logits_rows)
    : model_(model), dw_(*model.device_weights()), dev_(*dw_.device), max_rows_(max_rows),
      max_logits_rows_(max_logits_rows) {
  const ModelConfig& cfg = model.config();
  int max_q = 0, max_kv = 0, max_ffn = 0;
  for (const LayerConfig& L : cfg.layers) {
    max_q = std::max(max_q, cfg.num_heads * L.head_dim);
    max_kv = std::max(max_kv, L.n_kv_heads * L.head_dim);
    max_ffn = std::max(max_ffn, L.mlp_width);
  }
  const int H = cfg.hidden_size, LP = cfg.num_layers * cfg.ple_dim;
  auto act = [&](std::uint64_t words, const char* what) { return dev_.create_buffer(4 * words, Memory::device, what); };
  try {
    h_ = act(at(max_rows, H), "hidden states");
    a_ = act(at(max_rows, H), "normed hidden states");
    o_ = act(at(max_rows, H), "layer outputs");
    q_ = act(at(max_rows, max_q), "queries");
    attn_ = act(at(max_rows, max_q), "attention outputs");
    k_ = act(at(max_rows, max_kv), "keys");
    v_ = act(at(max_rows, max_kv), "values");
    gate_ = act(at(max_rows, max_ffn), "MLP gate");
    up_ = act(at(max_rows, max_ffn), "MLP up");
    if (cfg.ple_dim > 0) {
      ple_all_ = act(2 * at(max_rows, LP), "per-layer inputs");
      ple_g_ = act(at(max_rows, cfg.ple_dim), "per-layer gate");
    }
    off_ple_tok_ = at(max_rows, H);
    off_rope_[0] = off_ple_tok_ + at(max_rows, LP);
    off_rope_[1] = off_rope_[0] + at(max_rows, cfg.head_dim);
    off_rope_[2] = off_rope_[1] + at(max_rows, cfg.global_head_dim);
    off_rope_[3] = off_rope_[2] + at(max_rows, cfg.head_dim);
    host_f_.resize(off_rope_[3] + at(max_rows, cfg.global_head_dim));
    for (const LayerConfig& L : cfg.layers) n_caches_ += L.owns_kv ? 1 : 0;
    host_i_.resize((6 + static_cast<std::size_t>(n_caches_)) * static_cast<std::size_t>(max_rows));
    ids_.resize(static_cast<std::size_t>(max_rows));
    for (std::vector<int>* g : {&groups_early_, &groups_late_, &groups_head_}) g->reserve(static_cast<std::size_t>(max_rows));
    ones_.assign(static_cast<std::size_t>(std::max(max_rows, max_logits_rows)), 1);
    pos_.resize(static_cast<std::size_t>(max_rows));
    in_f_ = dev_.create_buffer(4 * host_f_.size(), Memory::host, "step inputs");
    in_i_ = dev_.create_buffer(4 * host_i_.size(), Memory::host, "step positions");
    head_ = dev_.create_buffer(4 * at(max_rows, H), Memory::host, "final hidden states");
    logits_ = dev_.create_buffer(4 * at(max_logits_rows, cfg.vocab_size), Memory::host, "logits");
  } catch (...) {
    for (backend::BufferId b : {h_, a_, q_, k_, v_, attn_, o_, gate_, up_, ple_all_, ple_g_, in_f_, in_i_, head_, logits_})
      dev_.destroy_buffer(b);
    throw;
  }
}

DeviceForward::~DeviceForward() {
  try {
    for (backend::BufferId b : {h_, a_, q_, k_, v_, attn_, o_, gate_, up_, ple_all_, ple_g_, in_f_, in_i_, head_, logits_})
      dev_.destroy_buffer(b);
  } catch (const Error&) {
    // A lost device frees nothing; the buffers go with it.
  }
}

void DeviceForward::prepare_inputs(std::span<DeviceSegment> segs, int rows) {
  const ModelConfig& cfg = model_.config();
  const ModelWeights& w = model_.weights();
  const int H = cfg.hidden_size, P = cfg.ple_dim, LP = cfg.num_layers * P, M = max_rows_;
  const int DS = cfg.head_dim, DF = cfg.global_head_dim;
  for (const DeviceSegment& s : segs) {
    std::copy_n(s.ids, s.n, ids_.data() + s.first_row);
    std::copy_n(s.positions, s.n, pos_.data() + s.first_row);
  }
  kernels::gather_rows(w.embed_tokens, ids_.data(), rows, 0, H, std::sqrt(static_cast<float>(H)), host_f_.data());
  for (const DeviceSegment& s : segs)  // soft tokens replace their rows, unscaled
    for (int i = 0; i < s.n && !s.overrides.empty(); ++i) {
      auto it = std::lower_bound(s.overrides.begin(), s.overrides.end(), s.positions[i],
                                 [](const EmbeddingOverride& o, std::int64_t p) { return o.position < p; });
      if (it != s.overrides.end() && it->position == s.positions[i])
        std::copy_n(it->row, H, host_f_.data() + at(s.first_row + i, H));
    }
  if (P > 0)
    kernels::gather_rows(w.embed_tokens_ple, ids_.data(), rows, 0, LP, std::sqrt(static_cast<float>(P)),
                         host_f_.data() + off_ple_tok_);
  model_.release_gather_pages();
  for (int t = 0; t < rows; ++t) {
    if (!cfg.rope_sliding.inv_freq.empty())
      kernels::rope_angles(cfg.rope_sliding.inv_freq.data(), DS / 2, pos_[t], host_f_.data() + off_rope_[0] + at(t, DS));
    if (!cfg.rope_full.inv_freq.empty())
      kernels::rope_angles(cfg.rope_full.inv_freq.data(), DF / 2, pos_[t], host_f_.data() + off_rope_[1] + at(t, DF));
  }
  const bool skips = cfg.num_kv_shared_layers > 0;
  int late = 0;
  any_drop_ = false;
  groups_late_.clear();
  for (DeviceSegment& s : segs) {
    kv::KvCache& cache = *s.cache;
    int ring = 0;  // every sliding layer of a session has a ring of the same size (Session)
    for (int i = 0; i < cache.size(); ++i)
      if (cache.layer(i).is_ring()) ring = cache.layer(i).spec().n_slots;
    for (int i = 0; i < s.n; ++i) {
      const std::int64_t p = s.positions[i];
      const int t = s.first_row + i;
      host_i_[t] = static_cast<std::int32_t>(p);
      host_i_[M + t] = ring > 0 ? static_cast<std::int32_t>(p % ring) : 0;
      host_i_[2 * M + t] = static_cast<std::int32_t>(p);
      for (int l = 0; l < cache.size(); ++l) cache.layer(l).set_position(cache.layer(l).slot_of(p), p);
    }
    const int drop = skips && !s.full_prefill ? std::min(s.first_logits_row, s.n) : 0;
    any_drop_ = any_drop_ || drop > 0;
    s.late_first = late;
    s.late_n = s.n - drop;
    late += s.late_n;
    if (s.late_n > 0) push_groups(groups_late_, s, s.n - s.late_n, s.n);
  }
  // Per segment and cache, the slots attention scans (a full cache: up to its highest used
  // slot), read by the shader from here so that the recorded step does not change as it grows.
  for (std::size_t si = 0; si < segs.size(); ++si)
    for (int c = 0; c < segs[si].cache->size(); ++c)
      host_i_[6 * M + si * n_caches_ + c] = segs[si].cache->layer(c).view().n_slots;
  dev_.write(in_i_, 4 * at(6, M), host_i_.data() + at(6, M), 4 * at(static_cast<int>(segs.size()), n_caches_));
  if (any_drop_)  // the kept rows' angles and positions, packed as the late layers see them
    for (const DeviceSegment& s : segs)
      for (int i = 0; i < s.late_n; ++i) {
        const int from = s.first_row + s.n - s.late_n + i, to = s.late_first + i;
        std::copy_n(host_f_.data() + off_rope_[0] + at(from, DS), DS, host_f_.data() + off_rope_[2] + at(to, DS));
        std::copy_n(host_f_.data() + off_rope_[1] + at(from, DF), DF, host_f_.data() + off_rope_[3] + at(to, DF));
        for (int r = 0; r < 3; ++r) host_i_[(3 + r) * M + to] = host_i_[r * M + from];
      }
  // Only the step's rows of each region (a decode step is one row of max_rows).
  const std::pair<std::uint64_t, int> regions[] = {{0, H}, {off_ple_tok_, LP}, {off_rope_[0], DS}, {off_rope_[1], DF},
                                                   {off_rope_[2], DS}, {off_rope_[3], DF}};
  for (int r = 0; r < (any_drop_ ? 6 : 4); ++r) {
    const auto [offset, width] = regions[r];
    const int n = r < 4 ? rows : late;
    if (width > 0 && n > 0) dev_.write(in_f_, 4 * offset, host_f_.data() + offset, 4 * at(n, width));
  }
  for (int r = 0; r < (any_drop_ ? 6 : 3); ++r) {
    const int n = r < 3 ? rows : late;
    if (n > 0) dev_.write(in_i_, 4 * at(r, M), host_i_.data() + at(r, M), 4ull * n);
  }
}

void DeviceForward::run(std::span<DeviceSegment> segs, float* logits) {
  const ModelConfig& cfg = model_.config();
  const int H = cfg.hidden_size;
  int rows = 0, head_rows = 0;
  for (DeviceSegment& s : segs) {
    if (s.n <= 0 || s.first_logits_row < 0 || s.first_logits_row > s.n)
      fail_as(ErrorKind::internal, "device step: a segment of ", s.n, " rows, logits from ", s.first_logits_row);
    s.first_row = rows;
    s.logits_row = -1;
    rows += s.n;
    if (s.run_head) head_rows += s.n - s.first_logits_row;
  }
  if (rows > max_rows_ || head_rows > max_logits_rows_)
    fail_as(ErrorKind::internal, "device step of ", rows, " rows (", head_rows, " with logits); room for ", max_rows_,
            " (", max_logits_rows_, ")");
  // The matmuls' row groups (one per segment, so each segment's rows run the shader its own
  // rows choose): all rows, then after the prompt-row skip (prepare_inputs), the LM head's.
  groups_early_.clear();
  groups_head_.clear();
  for (const DeviceSegment& s : segs) {
    push_groups(groups_early_, s, 0, s.n);
    if (s.run_head && s.n > s.first_logits_row) push_groups(groups_head_, s, s.first_logits_row, s.n);
  }
  if (rows == 0) return;
  prepare_inputs(segs, rows);
  try {
    record(segs, rows, head_rows);
  } catch (...) {
    dev_.abandon_step();
    throw;
  }
  for (const DeviceSegment& s : segs) {
    const int want = s.n - s.first_logits_row;
    if (want > 0) dev_.read(head_, 4 * at(s.head_row + want - 1, H), s.head_in, 4ull * H);
  }
  if (head_rows > 0) dev_.read(logits_, 0, logits, 4 * at(head_rows, cfg.vocab_size));
}

void DeviceForward::push_groups(std::vector<int>& groups, const DeviceSegment& s, int from, int to) {
  if (to <= from) return;
  if (!s.row_chunk) return groups.push_back(to - from);
  // Rows [from, to) of the segment: the leading chunk rows as one group, then one group per row.
  int lead = 0;
  while (lead < s.n && s.row_chunk[lead]) ++lead;
  if (from < lead) groups.push_back(std::min(lead, to) - from);
  for (int r = std::max(from, lead); r < to; ++r) groups.push_back(1);
}

void DeviceForward::read_final_rows(float* out, int n) const {
  if (n <= 0) return;
  if (n > max_logits_rows_) fail_as(ErrorKind::internal, "device: ", n, " final rows; room for ", max_logits_rows_);
  dev_.read(head_, 0, out, 4 * at(n, model_.config().hidden_size));
}

void DeviceForward::head(const float* rows, int n, float* logits) {
  const ModelConfig& cfg = model_.config();
  if (n <= 0) return;
  if (n > max_logits_rows_ || n > max_rows_)
    fail_as(ErrorKind::internal, "device LM head over ", n, " rows; room for ", max_logits_rows_);
  dev_.write(head_, 0, rows, 4 * at(n, cfg.hidden_size));
  try {
    dev_.begin_step();
    // Each row is one session's head (BatchForward::head_logits): a group of its own.
    device_matmul(dev_, dw_.lm_head, {head_, 0}, std::span<const int>(ones_.data(), static_cast<std::size_t>(n)),
                  {logits_, 0});
    if (cfg.final_logit_softcapping > 0)
      dev_.soft_cap({logits_, 0}, at(n, cfg.vocab_size), static_cast<float>(cfg.final_logit_softcapping));
    dev_.end_step();
  } catch (...) {
    dev_.abandon_step();
    throw;
  }
  dev_.read(logits_, 0, logits, 4 * at(n, cfg.vocab_size));
}

void DeviceForward::compact_rows(std::span<const DeviceSegment> segs, int late_rows) {
  const ModelConfig& cfg = model_.config();
  const int H = cfg.hidden_size, LP = cfg.num_layers * cfg.ple_dim;
  // Through o_ (free between layers): a copy within one buffer could overlap itself.
  for (const DeviceSegment& s : segs) {
    if (s.late_n == 0) continue;
    const int from = s.first_row + s.n - s.late_n;
    dev_.copy({h_, at(from, H)}, {o_, at(s.late_first, H)}, at(s.late_n, H));
    if (LP > 0) dev_.copy({ple_all_, at(from, LP)}, {ple_all_, at(max_rows_ + s.late_first, LP)}, at(s.late_n, LP));
  }
  dev_.copy({o_, 0}, {h_, 0}, at(late_rows, H));
}

void DeviceForward::record(std::span<DeviceSegment> segs, int rows, int head_rows) {
  const ModelConfig& cfg = model_.config();
  const int H = cfg.hidden_size, P = cfg.ple_dim, L = cfg.num_layers, LP = L * P, M = max_rows_;
  const float eps = static_cast<float>(cfg.rms_norm_eps);
  dev_.begin_step();
  dev_.copy({in_f_, 0}, {h_, 0}, at(rows, H));
  if (P > 0) {  // per-layer inputs: the scaled, normed projection plus the token rows, mixed
    device_matmul(dev_, dw_.ple_model_projection, {h_, 0}, groups_early_, {ple_all_, 0});
    dev_.scale({ple_all_, 0}, at(rows, LP), 1.0f / std::sqrt(static_cast<float>(H)));
    dev_.rms_norm({ple_all_, 0}, dw_.ple_projection_norm, P, rows * L, eps, {ple_all_, 0});
    dev_.add({ple_all_, 0}, {in_f_, off_ple_tok_}, at(rows, LP));
    dev_.scale({ple_all_, 0}, at(rows, LP), 1.0f / std::sqrt(2.0f));
  }
  Phase ph{false, rows, off_rope_[0], off_rope_[1], 0, at(1, M), at(2, M), 0, groups_early_};
  const int first_shared = cfg.num_kv_shared_layers > 0 ? cfg.first_shared_layer() : L;
  for (int l = 0; l < L; ++l) {
    if (l == first_shared) {  // only the rows that want logits go on
      Phase late = ph;
      late.late = true;
      late.rows = 0;
      late.groups = groups_late_;
      for (const DeviceSegment& s : segs) late.rows += s.late_n;
      if (any_drop_) {
        late = {true, late.rows, off_rope_[2], off_rope_[3], at(3, M), at(4, M), at(5, M), at(M, LP), groups_late_};
        if (late.rows > 0) compact_rows(segs, late.rows);
      }
      ph = late;
    }
    if (ph.rows == 0) break;
    attention_block(l, ph, segs);
    mlp_block(l, ph);
  }
  // Final norm of the rows that want it, run_head segments' first (the LM head's rows).
  int head_at = 0, hidden_at = head_rows;
  for (DeviceSegment& s : segs) {
    const int want = s.n - s.first_logits_row;
    if (want <= 0) continue;
    s.head_row = s.run_head ? head_at : hidden_at;
    if (s.run_head) s.logits_row = head_at;
    (s.run_head ? head_at : hidden_at) += want;
    const int from = ph.first(s) + ph.count(s) - want;
    dev_.rms_norm({h_, at(from, H)}, dw_.final_norm, H, want, eps, {head_, at(s.head_row, H)});
  }
  if (head_rows > 0) {
    device_matmul(dev_, dw_.lm_head, {head_, 0}, groups_head_, {logits_, 0});
    if (cfg.final_logit_softcapping > 0)
      dev_.soft_cap({logits_, 0}, at(head_rows, cfg.vocab_size), static_cast<float>(cfg.final_logit_softcapping));
  }
  dev_.end_step();
}

void DeviceForward::attention_block(int l, const Phase& ph, std::span<const DeviceSegment> segs) {
  const ModelConfig& cfg = model_.config();
  const LayerConfig& L = cfg.layers[l];
  const DeviceLayerWeights& lw = dw_.layers[l];
  const int H = cfg.hidden_size, d = L.head_dim, nh = cfg.num_heads, nkv = L.n_kv_heads, rows = ph.rows;
  const float eps = static_cast<float>(cfg.rms_norm_eps);
  const bool sliding = L.kind == AttentionKind::Sliding;
  const Ref rope{in_f_, sliding ? ph.rope_s : ph.rope_f};
  const Ref q{q_, 0}, k{k_, 0}, v{v_, 0};

  dev_.rms_norm({h_, 0}, lw.input_norm, H, rows, eps, {a_, 0});
  device_matmul(dev_, lw.q_proj, {a_, 0}, ph.groups, q);
  dev_.rms_norm(q, lw.q_norm, d, rows * nh, eps, q);
  dev_.rope(q, d, rows * nh, nh, rope);
  if (L.owns_kv) {
    device_matmul(dev_, lw.k_proj, {a_, 0}, ph.groups, k);
    device_matmul(dev_, lw.v_proj, {a_, 0}, ph.groups, v);
    dev_.rms_norm(k, lw.k_norm, d, rows * nkv, eps, k);
    dev_.rope(k, d, rows * nkv, nkv, rope);
    dev_.rms_norm(v, {}, d, rows * nkv, eps, v);
  }
  for (std::size_t si = 0; si < segs.size(); ++si) {
    const DeviceSegment& s = segs[si];
    const int first = ph.first(s), n = ph.count(s);
    if (n == 0) continue;
    const int ci = (*s.cache_index)[l];
    const backend::KvLayer& kv = s.kv->layer(ci);
    const Ref positions{in_i_, ph.pos + first};
    if (L.owns_kv)
      dev_.kv_store(kv, k.at(at(first, nkv * d)), v.at(at(first, nkv * d)),
                    {in_i_, (sliding ? ph.ring : ph.full) + first}, positions, n);
    const std::uint64_t scan_word = at(6, max_rows_) + si * n_caches_ + ci;  // prepare_inputs wrote it
    dev_.attend(q.at(at(first, nh * d)), n, positions, nh, kv, kv.n_slots, sliding ? cfg.sliding_window : 0, 1.0f,
                {attn_, at(first, nh * d)}, static_cast<std::int64_t>(scan_word));
  }
  device_matmul(dev_, lw.o_proj, {attn_, 0}, ph.groups, {o_, 0});
  dev_.rms_norm({o_, 0}, lw.post_attention_norm, H, rows, eps, {o_, 0});
  dev_.add({h_, 0}, {o_, 0}, at(rows, H));
}

void DeviceForward::mlp_block(int l, const Phase& ph) {
  const ModelConfig& cfg = model_.config();
  const LayerConfig& L = cfg.layers[l];
  const DeviceLayerWeights& lw = dw_.layers[l];
  const LayerWeights& hw = model_.weights().layers[l];
  const int H = cfg.hidden_size, W = L.mlp_width, P = cfg.ple_dim, LP = cfg.num_layers * P, rows = ph.rows;
  const float eps = static_cast<float>(cfg.rms_norm_eps);
  const Ref h{h_, 0}, a{a_, 0}, o{o_, 0};

  dev_.rms_norm(h, lw.pre_feedforward_norm, H, rows, eps, a);
  device_matmul(dev_, lw.gate_proj, a, ph.groups, {gate_, 0});
  device_matmul(dev_, lw.up_proj, a, ph.groups, {up_, 0});
  dev_.gelu_mul({gate_, 0}, {up_, 0}, W, rows, W, {gate_, 0});
  device_matmul(dev_, lw.down_proj, {gate_, 0}, ph.groups, o);
  dev_.rms_norm(o, lw.post_feedforward_norm, H, rows, eps, o);
  dev_.add(h, o, at(rows, H));
  if (P > 0) {
    const Ref g{ple_g_, 0};
    device_matmul(dev_, lw.ple_gate, h, ph.groups, g);
    dev_.gelu_mul(g, {ple_all_, ph.ple + static_cast<std::uint64_t>(l) * P}, P, rows, LP, g);
    device_matmul(dev_, lw.ple_projection, g, ph.groups, o);
    dev_.rms_norm(o, lw.post_ple_norm, H, rows, eps, o);
    dev_.add(h, o, at(rows, H));
  }
  dev_.scale(h, at(rows, H), hw.layer_scalar);
}

}  // namespace ringlm::model::detail
