#include "model/device_session.h"

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

DeviceSession::DeviceSession(const Model& model, const kv::KvCache& cache, int max_rows)
    : model_(model), dw_(*model.device_weights()), dev_(*dw_.device), max_rows_(max_rows) {
  const ModelConfig& cfg = model.config();
  for (int i = 0; i < cache.size(); ++i) {
    const kv::LayerCacheSpec& s = cache.layer(i).spec();
    backend::KvLayer kv;
    kv.n_slots = s.n_slots;
    kv.n_kv_heads = s.n_kv_heads;
    kv.head_dim = s.head_dim;
    const std::uint64_t bytes = 2ull * s.n_slots * s.n_kv_heads * s.head_dim;
    const std::string name = "KV cache " + std::to_string(i);
    kv.k = dev_.create_buffer(bytes, Memory::device, name + " keys");
    kv.v = dev_.create_buffer(bytes, Memory::device, name + " values");
    kv.pos = dev_.create_buffer(4ull * s.n_slots, Memory::device, name + " positions");
    dev_.fill_words(kv.pos, 0xFFFFFFFFu);  // -1: empty
    kv_.push_back(kv);
  }
  int max_q = 0, max_kv = 0, max_ffn = 0;
  for (const LayerConfig& L : cfg.layers) {
    max_q = std::max(max_q, cfg.num_heads * L.head_dim);
    max_kv = std::max(max_kv, L.n_kv_heads * L.head_dim);
    max_ffn = std::max(max_ffn, L.mlp_width);
  }
  const int H = cfg.hidden_size, LP = cfg.num_layers * cfg.ple_dim;
  auto act = [&](int width, const char* what) { return dev_.create_buffer(4 * at(max_rows, width), Memory::device, what); };
  h_ = act(H, "hidden states");
  a_ = act(H, "normed hidden states");
  o_ = act(H, "layer outputs");
  q_ = act(max_q, "queries");
  attn_ = act(max_q, "attention outputs");
  k_ = act(max_kv, "keys");
  v_ = act(max_kv, "values");
  gate_ = act(max_ffn, "MLP gate");
  up_ = act(max_ffn, "MLP up");
  if (cfg.ple_dim > 0) {
    ple_all_ = act(LP, "per-layer inputs");
    ple_g_ = act(cfg.ple_dim, "per-layer gate");
  }
  off_ple_tok_ = at(max_rows, H);
  off_rope_s_ = off_ple_tok_ + at(max_rows, LP);
  off_rope_f_ = off_rope_s_ + at(max_rows, cfg.head_dim);
  host_f_.resize(off_rope_f_ + at(max_rows, cfg.global_head_dim));
  host_i_.resize(3 * static_cast<std::size_t>(max_rows));
  in_f_ = dev_.create_buffer(4 * host_f_.size(), Memory::host, "step inputs");
  in_i_ = dev_.create_buffer(4 * host_i_.size(), Memory::host, "step positions");
  head_ = dev_.create_buffer(4 * at(max_rows, H), Memory::host, "final hidden states");
  logits_ = dev_.create_buffer(4 * at(max_rows, cfg.vocab_size), Memory::host, "logits");
}

DeviceSession::~DeviceSession() {
  try {
    for (const backend::KvLayer& kv : kv_)
      for (backend::BufferId b : {kv.k, kv.v, kv.pos}) dev_.destroy_buffer(b);
    for (backend::BufferId b : {h_, a_, q_, k_, v_, attn_, o_, gate_, up_, ple_all_, ple_g_, in_f_, in_i_, head_, logits_})
      dev_.destroy_buffer(b);
  } catch (const Error&) {
    // A lost device frees nothing; the buffers go with it.
  }
}

void DeviceSession::sync_positions(const kv::KvCache& cache) {
  for (int i = 0; i < cache.size(); ++i) {
    const std::vector<std::int32_t>& pos = cache.layer(i).positions();
    dev_.write(kv_[i].pos, 0, pos.data(), 4 * pos.size());
  }
}

void DeviceSession::prepare_inputs(const Step& st, kv::KvCache& cache) {
  const ModelConfig& cfg = model_.config();
  const ModelWeights& w = model_.weights();
  const int H = cfg.hidden_size, P = cfg.ple_dim, LP = cfg.num_layers * P, n = st.n;
  kernels::gather_rows(w.embed_tokens, st.ids, n, 0, H, std::sqrt(static_cast<float>(H)), host_f_.data());
  for (int i = 0; i < n && !st.overrides.empty(); ++i) {  // soft tokens replace their rows, unscaled
    auto it = std::lower_bound(st.overrides.begin(), st.overrides.end(), st.positions[i],
                               [](const EmbeddingOverride& o, std::int64_t p) { return o.position < p; });
    if (it != st.overrides.end() && it->position == st.positions[i])
      std::copy_n(it->row, H, host_f_.data() + at(i, H));
  }
  if (P > 0)
    kernels::gather_rows(w.embed_tokens_ple, st.ids, n, 0, LP, std::sqrt(static_cast<float>(P)),
                         host_f_.data() + off_ple_tok_);
  model_.release_gather_pages();
  for (int t = 0; t < n; ++t) {
    if (!cfg.rope_sliding.inv_freq.empty())
      kernels::rope_angles(cfg.rope_sliding.inv_freq.data(), cfg.head_dim / 2, st.positions[t],
                           host_f_.data() + off_rope_s_ + at(t, cfg.head_dim));
    if (!cfg.rope_full.inv_freq.empty())
      kernels::rope_angles(cfg.rope_full.inv_freq.data(), cfg.global_head_dim / 2, st.positions[t],
                           host_f_.data() + off_rope_f_ + at(t, cfg.global_head_dim));
  }
  int ring = 0;  // every sliding layer has a ring of the same size (Session)
  for (int i = 0; i < cache.size(); ++i)
    if (cache.layer(i).is_ring()) ring = cache.layer(i).spec().n_slots;
  for (int t = 0; t < n; ++t) {
    const std::int64_t p = st.positions[t];
    host_i_[t] = static_cast<std::int32_t>(p);
    host_i_[max_rows_ + t] = ring > 0 ? static_cast<std::int32_t>(p % ring) : 0;
    host_i_[2 * max_rows_ + t] = static_cast<std::int32_t>(p);
    for (int i = 0; i < cache.size(); ++i) cache.layer(i).set_position(cache.layer(i).slot_of(p), p);
  }
  // Only the step's rows of each region (a decode step is one row of max_rows).
  for (const auto& [offset, width] : {std::pair<std::uint64_t, int>{0, H}, {off_ple_tok_, LP},
                                      {off_rope_s_, cfg.head_dim}, {off_rope_f_, cfg.global_head_dim}})
    if (width > 0) dev_.write(in_f_, 4 * offset, host_f_.data() + offset, 4 * at(n, width));
  for (int region = 0; region < 3; ++region)
    dev_.write(in_i_, 4ull * region * max_rows_, host_i_.data() + region * max_rows_, 4ull * n);
}

void DeviceSession::forward(const Step& st, kv::KvCache& cache, const std::vector<int>& cache_index, float* logits,
                            float* head_in) {
  const ModelConfig& cfg = model_.config();
  const int H = cfg.hidden_size, n = st.n;
  if (n <= 0 || n > max_rows_) fail_as(ErrorKind::internal, "device step of ", n, " rows (room for ", max_rows_, ")");
  prepare_inputs(st, cache);
  try {
    record(st, cache, cache_index);
  } catch (...) {
    dev_.abandon_step();
    throw;
  }
  const int want = n - st.first_logits_row;
  if (want <= 0) return;
  dev_.read(head_, 4 * at(want - 1, H), head_in, 4ull * H);
  if (st.run_head) dev_.read(logits_, 0, logits, 4 * at(want, cfg.vocab_size));
}

void DeviceSession::record(const Step& st, const kv::KvCache& cache, const std::vector<int>& cache_index) {
  const ModelConfig& cfg = model_.config();
  const int H = cfg.hidden_size, P = cfg.ple_dim, L = cfg.num_layers, LP = L * P, n = st.n;
  const float eps = static_cast<float>(cfg.rms_norm_eps);
  dev_.begin_step();
  dev_.copy({in_f_, 0}, {h_, 0}, at(n, H));
  if (P > 0) {  // per-layer inputs: the scaled, normed projection plus the token rows, mixed
    dev_.matmul(dw_.ple_model_projection, {h_, 0}, n, {ple_all_, 0});
    dev_.scale({ple_all_, 0}, at(n, LP), 1.0f / std::sqrt(static_cast<float>(H)));
    dev_.rms_norm({ple_all_, 0}, dw_.ple_projection_norm, P, n * L, eps, {ple_all_, 0});
    dev_.add({ple_all_, 0}, {in_f_, off_ple_tok_}, at(n, LP));
    dev_.scale({ple_all_, 0}, at(n, LP), 1.0f / std::sqrt(2.0f));
  }
  int row0 = 0;
  const int first_shared = cfg.num_kv_shared_layers > 0 ? cfg.first_shared_layer() : L;
  for (int l = 0; l < L; ++l) {
    if (l == first_shared && !st.full_prefill) row0 = std::min(st.first_logits_row, n);  // only rows wanting logits
    if (row0 == n) break;
    attention_block(l, row0, n - row0, cache, cache_index);
    mlp_block(l, row0, n - row0);
  }
  const int want = n - st.first_logits_row;
  if (want > 0) {
    dev_.rms_norm({h_, at(st.first_logits_row, H)}, dw_.final_norm, H, want, eps, {head_, 0});
    if (st.run_head) {
      dev_.matmul(dw_.lm_head, {head_, 0}, want, {logits_, 0});
      if (cfg.final_logit_softcapping > 0)
        dev_.soft_cap({logits_, 0}, at(want, cfg.vocab_size), static_cast<float>(cfg.final_logit_softcapping));
    }
  }
  dev_.end_step();
}

void DeviceSession::attention_block(int l, int row0, int rows, const kv::KvCache& cache,
                                    const std::vector<int>& cache_index) {
  const ModelConfig& cfg = model_.config();
  const LayerConfig& L = cfg.layers[l];
  const DeviceLayerWeights& lw = dw_.layers[l];
  const int H = cfg.hidden_size, d = L.head_dim, nh = cfg.num_heads, nkv = L.n_kv_heads;
  const float eps = static_cast<float>(cfg.rms_norm_eps);
  const bool sliding = L.kind == AttentionKind::Sliding;
  const Ref rope{in_f_, (sliding ? off_rope_s_ : off_rope_f_) + at(row0, d)};
  const Ref q{q_, at(row0, nh * d)}, k{k_, at(row0, nkv * d)}, v{v_, at(row0, nkv * d)};

  dev_.rms_norm({h_, at(row0, H)}, lw.input_norm, H, rows, eps, {a_, at(row0, H)});
  dev_.matmul(lw.q_proj, {a_, at(row0, H)}, rows, q);
  dev_.rms_norm(q, lw.q_norm, d, rows * nh, eps, q);
  dev_.rope(q, d, rows * nh, nh, rope);
  const int ci = cache_index[l];
  const backend::KvLayer& kv = kv_[ci];
  if (L.owns_kv) {
    dev_.matmul(lw.k_proj, {a_, at(row0, H)}, rows, k);
    dev_.matmul(lw.v_proj, {a_, at(row0, H)}, rows, v);
    dev_.rms_norm(k, lw.k_norm, d, rows * nkv, eps, k);
    dev_.rope(k, d, rows * nkv, nkv, rope);
    dev_.rms_norm(v, {}, d, rows * nkv, eps, v);
    const Ref slots{in_i_, static_cast<std::uint64_t>((sliding ? 1 : 2) * max_rows_ + row0)};
    dev_.kv_store(kv, k, v, slots, {in_i_, static_cast<std::uint64_t>(row0)}, rows);
  }
  const int n_scan = cache.layer(ci).view().n_slots;  // a full cache: up to its highest used slot
  dev_.attend(q, rows, {in_i_, static_cast<std::uint64_t>(row0)}, nh, kv, n_scan, sliding ? cfg.sliding_window : 0,
              1.0f, {attn_, at(row0, nh * d)});
  dev_.matmul(lw.o_proj, {attn_, at(row0, nh * d)}, rows, {o_, at(row0, H)});
  dev_.rms_norm({o_, at(row0, H)}, lw.post_attention_norm, H, rows, eps, {o_, at(row0, H)});
  dev_.add({h_, at(row0, H)}, {o_, at(row0, H)}, at(rows, H));
}

void DeviceSession::mlp_block(int l, int row0, int rows) {
  const ModelConfig& cfg = model_.config();
  const LayerConfig& L = cfg.layers[l];
  const DeviceLayerWeights& lw = dw_.layers[l];
  const LayerWeights& hw = model_.weights().layers[l];
  const int H = cfg.hidden_size, W = L.mlp_width, P = cfg.ple_dim, LP = cfg.num_layers * P;
  const float eps = static_cast<float>(cfg.rms_norm_eps);
  const Ref h{h_, at(row0, H)}, a{a_, at(row0, H)}, o{o_, at(row0, H)};

  dev_.rms_norm(h, lw.pre_feedforward_norm, H, rows, eps, a);
  dev_.matmul(lw.gate_proj, a, rows, {gate_, at(row0, W)});
  dev_.matmul(lw.up_proj, a, rows, {up_, at(row0, W)});
  dev_.gelu_mul({gate_, at(row0, W)}, {up_, at(row0, W)}, W, rows, W, {gate_, at(row0, W)});
  dev_.matmul(lw.down_proj, {gate_, at(row0, W)}, rows, o);
  dev_.rms_norm(o, lw.post_feedforward_norm, H, rows, eps, o);
  dev_.add(h, o, at(rows, H));
  if (P > 0) {
    const Ref g{ple_g_, at(row0, P)};
    dev_.matmul(lw.ple_gate, h, rows, g);
    dev_.gelu_mul(g, {ple_all_, at(row0, LP) + static_cast<std::uint64_t>(l) * P}, P, rows, LP, g);
    dev_.matmul(lw.ple_projection, g, rows, o);
    dev_.rms_norm(o, lw.post_ple_norm, H, rows, eps, o);
    dev_.add(h, o, at(rows, H));
  }
  dev_.scale(h, at(rows, H), hw.layer_scalar);
}

}  // namespace ringlm::model::detail
