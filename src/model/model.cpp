#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <vector>

#include "io/safetensors.h"
#include "kernels/attention.h"
#include "kernels/ref_matmul.h"
#include "kernels/ref_ops.h"
#include "kernels/thread_pool.h"
#include "model/packed_format.h"
#include "model/packed_source.h"
#include "model/q4_weights.h"
#include "util/error.h"

namespace ringlm::model {

namespace {
// RINGLM_ATTENTION=reference selects the float reference attention (attend_one per token)
// instead of the tiled kernel, read once: for A/B comparisons of numerics and speed.
bool reference_attention() {
  static const bool ref = [] {
    const char* env = std::getenv("RINGLM_ATTENTION");
    if (env == nullptr || *env == '\0' || std::string_view(env) == "tiled") return false;
    if (std::string_view(env) == "reference") return true;
    fail("RINGLM_ATTENTION=", env, ": expected 'tiled' or 'reference'");
  }();
  return ref;
}
}  // namespace

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
  m->source_ = std::move(source);
  m->weights_ = bind_weights(*m->source_, m->config_);
  if (options.threads > 0) kernels::set_default_thread_count(static_cast<std::size_t>(options.threads));
  if (options.weights != WeightFormat::q4_0) {
    // Stored weights that are already q4p16 (a converted directory): the float path over the
    // same dequantized rows, the reference for the kernels. (Marked before the GGUF repack:
    // GGUF blocks keep running as their --activations say.)
    for_each_matrix(m->weights_, [](kernels::WeightMatrix& w) {
      if (w.dtype == io::DType::Q4_0 && w.packed) w.float_path = true;
    });
  }
  m->quantized_ = repack_gguf_blocks(m->weights_);  // GGUF Q4_0/Q4_K/Q6_K/Q8_0 -> the kernels' layouts
  if (options.weights == WeightFormat::q4_0)
    for (auto& b : quantize_weights_q4_0(m->weights_)) m->quantized_.push_back(std::move(b));
  m->pool_ = std::make_unique<kernels::ParallelFor>(options.threads > 0 ? options.threads
                                                                          : kernels::default_thread_count());
  // Tables the forward pass only gathers rows from, read where the source stores them.
  auto gather_only = [&](const char* name, const kernels::WeightMatrix& w) {
    const io::TensorView* v = m->source_->find(name);
    if (v && w.data == v->data && m->weights_.lm_head.data != v->data)
      m->gather_only_.push_back({v->data, static_cast<std::size_t>(v->nbytes)});
  };
  gather_only("embed_tokens_per_layer.weight", m->weights_.embed_tokens_ple);
  gather_only("embed_tokens.weight", m->weights_.embed_tokens);
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
  int max_q = 0, max_kv = 0, max_ffn = 0;
  for (int l = 0; l < cfg_.num_layers; ++l) {
    const LayerConfig& L = cfg_.layers[l];
    max_q = std::max(max_q, cfg_.num_heads * L.head_dim);
    max_kv = std::max(max_kv, L.n_kv_heads * L.head_dim);
    max_ffn = std::max(max_ffn, L.mlp_width);
    if (!L.owns_kv) continue;
    kv::LayerCacheSpec s;
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

  const std::size_t T = kMaxChunk, H = cfg_.hidden_size;
  h_.resize(T * H);
  a_.resize(T * H);
  o_.resize(T * H);
  q_.resize(T * max_q);
  attn_.resize(T * max_q);
  k_.resize(T * max_kv);
  v_.resize(T * max_kv);
  gate_.resize(T * max_ffn);
  up_.resize(T * max_ffn);
  if (cfg_.ple_dim > 0) {
    ple_all_.resize(T * cfg_.num_layers * cfg_.ple_dim);
    ple_tok_.resize(T * cfg_.num_layers * cfg_.ple_dim);
    ple_g_.resize(T * cfg_.ple_dim);
  }
  rope_sliding_.resize(T * cfg_.head_dim);
  rope_full_.resize(T * cfg_.global_head_dim);
  logits_.resize(cfg_.vocab_size);  // one row; grows to kMaxChunk rows on the first LogitsMode::All
  head_in_.resize(H);
  head_rows_ = LmHeadRows(w_.lm_head, static_cast<float>(cfg_.final_logit_softcapping));
}

void Session::reset() {
  cache_.reset();
  next_position_ = 0;
  hidden_valid_ = false;
}

void Session::truncate(std::int64_t n) {
  if (n < 0) fail("cannot truncate the session to ", n, " positions");
  if (n >= next_position_) return;
  cache_.truncate(n);
  next_position_ = n;
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

std::span<const float> Session::head_input() const {
  require_hidden();
  return head_in_;
}

std::span<float> Session::head_logits() {
  require_hidden();
  kernels::matmul(w_.lm_head, head_in_.data(), 1, logits_.data(), model_->pool());
  if (cfg_.final_logit_softcapping > 0)
    kernels::soft_cap(logits_.data(), cfg_.vocab_size, static_cast<float>(cfg_.final_logit_softcapping));
  return {logits_.data(), static_cast<std::size_t>(cfg_.vocab_size)};
}

void Session::reserve_head_rows(std::size_t n) {
  if (head_values_.size() < n) head_values_.resize(n);
}

std::span<float> Session::head_logits_rows(std::span<const std::int32_t> ids) {
  require_hidden();
  reserve_head_rows(ids.size());
  // Compact first: a q4_0 head lands whole groups in the logits buffer before it is cleared.
  head_rows_.compute(head_in_.data(), ids, head_values_.data(), logits_.data(), model_->pool());
  std::fill_n(logits_.data(), cfg_.vocab_size, -std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < ids.size(); ++i) logits_[ids[i]] = head_values_[i];
  return {logits_.data(), static_cast<std::size_t>(cfg_.vocab_size)};
}

void Session::head_logits_compact(std::span<const std::int32_t> ids, std::span<float> out) {
  require_hidden();
  if (out.size() != ids.size()) fail("head_logits_compact: ", ids.size(), " ids but room for ", out.size(), " logits");
  head_rows_.compute(head_in_.data(), ids, out.data(), logits_.data(), model_->pool());
}

void Session::forward_chunk(const std::int32_t* ids, const std::int64_t* positions, int n, int first_logits_row,
                            bool run_head) {
  using namespace kernels;
  ParallelFor* pool = model_->pool();
  const int H = cfg_.hidden_size;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);

  // Token embeddings, scaled by sqrt(hidden_size) computed in float32.
  gather_rows(w_.embed_tokens, ids, n, 0, H, std::sqrt(static_cast<float>(H)), h_.data());
  // Soft tokens (images, audio) replace their rows, unscaled.
  if (!overrides_.empty())
    for (int t = 0; t < n; ++t) {
      auto it = std::lower_bound(overrides_.begin(), overrides_.end(), positions[t],
                                 [](const EmbeddingOverride& o, std::int64_t p) { return o.position < p; });
      if (it != overrides_.end() && it->position == positions[t])
        std::copy_n(it->row, H, h_.data() + static_cast<std::size_t>(t) * H);
    }

  // Per-layer inputs: a projection of the scaled embedding plus the per-layer token table.
  const int P = cfg_.ple_dim, LP = cfg_.num_layers * cfg_.ple_dim;
  if (P > 0) {
    matmul(w_.ple_model_projection, h_.data(), n, ple_all_.data(), pool);
    const float proj_scale = 1.0f / std::sqrt(static_cast<float>(H));
    const float tok_scale = std::sqrt(static_cast<float>(P));
    const float mix = 1.0f / std::sqrt(2.0f);
    gather_rows(w_.embed_tokens_ple, ids, n, 0, LP, tok_scale, ple_tok_.data());
    for (int t = 0; t < n; ++t)
      for (int l = 0; l < cfg_.num_layers; ++l) {
        float* ctx = ple_all_.data() + static_cast<std::size_t>(t) * LP + static_cast<std::size_t>(l) * P;
        const float* tok = ple_tok_.data() + static_cast<std::size_t>(t) * LP + static_cast<std::size_t>(l) * P;
        scale_inplace(ctx, P, proj_scale);
        rms_norm(ctx, w_.ple_projection_norm.data(), P, eps, ctx);
        for (int j = 0; j < P; ++j) ctx[j] = (ctx[j] + tok[j]) * mix;
      }
  }

  // The rows are copied out: give the table pages back (see Model::release_gather_pages).
  model_->release_gather_pages();

  // Rotation angles for this chunk, per attention kind.
  for (int t = 0; t < n; ++t) {
    if (!cfg_.rope_sliding.inv_freq.empty())
      rope_angles(cfg_.rope_sliding.inv_freq.data(), cfg_.head_dim / 2, positions[t],
                  rope_sliding_.data() + static_cast<std::size_t>(t) * cfg_.head_dim);
    if (!cfg_.rope_full.inv_freq.empty())
      rope_angles(cfg_.rope_full.inv_freq.data(), cfg_.global_head_dim / 2, positions[t],
                  rope_full_.data() + static_cast<std::size_t>(t) * cfg_.global_head_dim);
  }

  // From the first KV-shared layer on, only the rows that want logits matter (see
  // SessionOptions::full_prefill): move them to the front and run the rest on them alone.
  const int first_shared = cfg_.num_kv_shared_layers > 0 ? cfg_.first_shared_layer() : cfg_.num_layers;
  for (int l = 0; l < cfg_.num_layers; ++l) {
    if (l == first_shared && !full_prefill_ && first_logits_row > 0) {
      if (first_logits_row >= n) return;  // no row wants logits: nothing past here is kept
      keep_tail_rows(first_logits_row, n);
      positions += first_logits_row;
      n -= first_logits_row;
      first_logits_row = 0;
    }
    const LayerConfig& L = cfg_.layers[l];
    const LayerWeights& lw = w_.layers[l];
    attention_block(l, n, positions);

    // MLP block.
    for (int t = 0; t < n; ++t)
      rms_norm(h_.data() + static_cast<std::size_t>(t) * H, lw.pre_feedforward_norm.data(), H, eps,
               a_.data() + static_cast<std::size_t>(t) * H);
    {
      const WeightMatrix* ws[] = {&lw.gate_proj, &lw.up_proj};
      float* outs[] = {gate_.data(), up_.data()};
      matmul_shared_input(ws, outs, 2, a_.data(), n, pool);
    }
    {
      // Element-wise, so split by tokens over the threads (a prefill chunk has up to
      // 64 x 12288 of them).
      const std::size_t W = static_cast<std::size_t>(L.mlp_width);
      auto gelu_rows = [&](std::int64_t t0, std::int64_t t1) {
        const std::size_t off = static_cast<std::size_t>(t0) * W;
        gelu_mul(gate_.data() + off, up_.data() + off, static_cast<int>(static_cast<std::size_t>(t1 - t0) * W),
                 gate_.data() + off);
      };
      if (pool && n > 1) pool->run(n, gelu_rows);
      else gelu_rows(0, n);
    }
    matmul(lw.down_proj, gate_.data(), n, o_.data(), pool);
    for (int t = 0; t < n; ++t) {
      float* ot = o_.data() + static_cast<std::size_t>(t) * H;
      rms_norm(ot, lw.post_feedforward_norm.data(), H, eps, ot);
      add_inplace(h_.data() + static_cast<std::size_t>(t) * H, ot, H);
    }

    // Per-layer-embedding block.
    if (P > 0) {
      matmul(lw.ple_gate, h_.data(), n, ple_g_.data(), pool);
      for (int t = 0; t < n; ++t) {
        float* g = ple_g_.data() + static_cast<std::size_t>(t) * P;
        const float* in = ple_all_.data() + static_cast<std::size_t>(t) * LP + static_cast<std::size_t>(l) * P;
        gelu_mul(g, in, P, g);
      }
      matmul(lw.ple_projection, ple_g_.data(), n, o_.data(), pool);
      for (int t = 0; t < n; ++t) {
        float* ot = o_.data() + static_cast<std::size_t>(t) * H;
        rms_norm(ot, lw.post_ple_norm.data(), H, eps, ot);
        add_inplace(h_.data() + static_cast<std::size_t>(t) * H, ot, H);
      }
    }
    scale_inplace(h_.data(), static_cast<std::int64_t>(n) * H, lw.layer_scalar);
  }

  // Final norm, tied LM head, soft cap, for the rows that want logits. A single row is
  // normed straight into head_in_, where the deferred head calls find it.
  const int rows = n - first_logits_row;
  if (rows <= 0) return;
  float* normed = rows == 1 ? head_in_.data() : a_.data();
  for (int t = 0; t < rows; ++t)
    rms_norm(h_.data() + static_cast<std::size_t>(first_logits_row + t) * H, w_.final_norm.data(), H, eps,
             normed + static_cast<std::size_t>(t) * H);
  if (rows > 1) std::copy_n(a_.data() + static_cast<std::size_t>(rows - 1) * H, H, head_in_.data());
  hidden_valid_ = true;
  if (!run_head) return;
  matmul(w_.lm_head, normed, rows, logits_.data(), pool);
  if (cfg_.final_logit_softcapping > 0)
    soft_cap(logits_.data(), static_cast<std::int64_t>(rows) * cfg_.vocab_size,
             static_cast<float>(cfg_.final_logit_softcapping));
}

void Session::keep_tail_rows(int first, int n) {
  // Every per-token scratch the later layers read: hidden states, per-layer inputs, angles.
  auto shift = [&](std::vector<float>& buf, std::size_t row) {
    if (buf.empty()) return;
    std::copy(buf.begin() + static_cast<std::ptrdiff_t>(first * row), buf.begin() + static_cast<std::ptrdiff_t>(n * row),
              buf.begin());
  };
  shift(h_, static_cast<std::size_t>(cfg_.hidden_size));
  if (cfg_.ple_dim > 0) shift(ple_all_, static_cast<std::size_t>(cfg_.num_layers) * cfg_.ple_dim);
  if (!cfg_.rope_sliding.inv_freq.empty()) shift(rope_sliding_, static_cast<std::size_t>(cfg_.head_dim));
  if (!cfg_.rope_full.inv_freq.empty()) shift(rope_full_, static_cast<std::size_t>(cfg_.global_head_dim));
}

void Session::attention_block(int l, int n, const std::int64_t* positions) {
  using namespace kernels;
  ParallelFor* pool = model_->pool();
  const LayerConfig& L = cfg_.layers[l];
  const LayerWeights& lw = w_.layers[l];
  const int H = cfg_.hidden_size, d = L.head_dim, nh = cfg_.num_heads, nkv = L.n_kv_heads;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  const bool sliding = L.kind == AttentionKind::Sliding;
  const float* rope = sliding ? rope_sliding_.data() : rope_full_.data();

  for (int t = 0; t < n; ++t)
    rms_norm(h_.data() + static_cast<std::size_t>(t) * H, lw.input_norm.data(), H, eps,
             a_.data() + static_cast<std::size_t>(t) * H);
  if (L.owns_kv) {  // q, k and v read the same normed input: one quantization, one pool call
    const WeightMatrix* ws[] = {&lw.q_proj, &lw.k_proj, &lw.v_proj};
    float* outs[] = {q_.data(), k_.data(), v_.data()};
    matmul_shared_input(ws, outs, 3, a_.data(), n, pool);
  } else {
    matmul(lw.q_proj, a_.data(), n, q_.data(), pool);
  }
  for (int t = 0; t < n; ++t)
    for (int h = 0; h < nh; ++h) {
      float* qh = q_.data() + (static_cast<std::size_t>(t) * nh + h) * d;
      rms_norm(qh, lw.q_norm.data(), d, eps, qh);
      rope_apply(qh, d, rope + static_cast<std::size_t>(t) * d);
    }

  kv::LayerCache& cache = cache_.layer(cache_index_[l]);
  if (L.owns_kv) {
    for (int t = 0; t < n; ++t) {
      const int slot = cache.slot_of(positions[t]);
      float* ks = cache.key(slot);
      float* vs = cache.value(slot);
      for (int g = 0; g < nkv; ++g) {
        const std::size_t off = (static_cast<std::size_t>(t) * nkv + g) * d;
        rms_norm(k_.data() + off, lw.k_norm.data(), d, eps, ks + static_cast<std::size_t>(g) * d);
        rope_apply(ks + static_cast<std::size_t>(g) * d, d, rope + static_cast<std::size_t>(t) * d);
        rms_norm(v_.data() + off, nullptr, d, eps, vs + static_cast<std::size_t>(g) * d);
      }
      cache.set_position(slot, positions[t]);
    }
  }

  // Every query of the chunk sees the whole chunk's keys through the causal position test.
  // The tiled kernel reads each K/V tile once for all the chunk's tokens and heads; decode
  // splits the slots over the pool (kernels/attention.h, docs/attention.md).
  const int window = sliding ? cfg_.sliding_window : 0;
  const KvSlots view = cache.view();
  if (!reference_attention()) {
    attend(q_.data(), n, positions, nh, view, window, 1.0f, attn_.data(), pool);
  } else {
    // RINGLM_ATTENTION=reference: the float reference kernel one token at a time (A/B checks).
    KvSlots whole = view;
    whole.n_slots = cache.spec().n_slots;  // scratch sized for the whole cache once
    const std::size_t scratch = attend_scratch_floats(nh, whole);
    auto run = [&](std::int64_t begin, std::int64_t end) {
      thread_local std::vector<float> scores;
      if (scores.size() < scratch) scores.resize(scratch);
      for (std::int64_t t = begin; t < end; ++t)
        attend_one(q_.data() + static_cast<std::size_t>(t) * nh * d, nh, positions[t], view, window, 1.0f,
                   scores.data(), attn_.data() + static_cast<std::size_t>(t) * nh * d);
    };
    if (pool) pool->run(n, run);
    else run(0, n);
  }

  matmul(lw.o_proj, attn_.data(), n, o_.data(), pool);
  for (int t = 0; t < n; ++t) {
    float* ot = o_.data() + static_cast<std::size_t>(t) * H;
    rms_norm(ot, lw.post_attention_norm.data(), H, eps, ot);
    add_inplace(h_.data() + static_cast<std::size_t>(t) * H, ot, H);
  }
}

}  // namespace ringlm::model
