#include "model/forward_pass.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "kernels/attention.h"
#include "kernels/ref_matmul.h"
#include "kernels/ref_ops.h"
#include "model/greedy_head.h"
#include "util/error.h"

namespace ringlm::model::detail {

namespace {
std::size_t row_offset(int row, int width) { return static_cast<std::size_t>(row) * static_cast<std::size_t>(width); }

// fn(t0, t1) on slices of the rows [0, rows), split over the pool's threads when there are
// several. Each row is computed by one thread with the same code and inputs as the serial
// loop, so the results are bit-identical; the row-wise norms, RoPE and residual adds of a
// prefill chunk otherwise ran on the calling thread while the other threads waited
// (BENCHMARKS.md "Prefill and int8 batched decode: where the time goes").
template <typename Fn>
void for_row_slices(kernels::ParallelFor* pool, int rows, Fn&& fn) {
  auto slice = [&](std::int64_t t0, std::int64_t t1) { fn(static_cast<int>(t0), static_cast<int>(t1)); };
  if (pool != nullptr && rows > 1) pool->run(rows, slice);
  else slice(0, rows);
}
// fn(t) for every row, as for_row_slices.
template <typename Fn>
void for_rows(kernels::ParallelFor* pool, int rows, Fn&& fn) {
  for_row_slices(pool, rows, [&](int t0, int t1) {
    for (int t = t0; t < t1; ++t) fn(t);
  });
}
// rms_norm of rows [t0, t1) of width n, from x to y (row strides n; may alias), bit-identical to
// rms_norm row by row (kernels::rms_norm_rows).
void norm_rows(const float* x, const float* weight, int n, float eps, float* y, int t0, int t1) {
  kernels::rms_norm_rows(x + row_offset(t0, n), static_cast<std::size_t>(n), weight, n, eps, y + row_offset(t0, n),
                         static_cast<std::size_t>(n), t1 - t0);
}
}  // namespace

void ForwardScratch::size_for(const ModelConfig& cfg, int n_rows) {
  rows = n_rows;
  int max_q = 0, max_kv = 0, max_ffn = 0;
  for (const LayerConfig& L : cfg.layers) {
    max_q = std::max(max_q, cfg.num_heads * L.head_dim);
    max_kv = std::max(max_kv, L.n_kv_heads * L.head_dim);
    max_ffn = std::max(max_ffn, L.mlp_width);
  }
  const std::size_t T = static_cast<std::size_t>(n_rows), H = static_cast<std::size_t>(cfg.hidden_size);
  ids.resize(T);
  pos.resize(T);
  h.resize(T * H);
  a.resize(T * H);
  o.resize(T * H);
  q.resize(T * max_q);
  attn.resize(T * max_q);
  k.resize(T * max_kv);
  v.resize(T * max_kv);
  gate.resize(T * max_ffn);
  up.resize(T * max_ffn);
  if (cfg.ple_dim > 0) {
    ple_all.resize(T * cfg.num_layers * cfg.ple_dim);
    ple_tok.resize(T * cfg.num_layers * cfg.ple_dim);
    ple_g.resize(T * cfg.ple_dim);
  }
  rope_sliding.resize(T * cfg.head_dim);
  rope_full.resize(T * cfg.global_head_dim);
  attend_rows.reserve(T);
}

ForwardPass::ForwardPass(const Model& model, ForwardScratch& scratch, std::span<ForwardSegment> segments,
                         float* logits)
    : model_(model), cfg_(model.config()), w_(model.weights()), s_(scratch), segs_(segments), logits_(logits) {}

void ForwardPass::run() {
  int rows = 0;
  for (ForwardSegment& seg : segs_) {
    seg.first_row = rows;
    seg.logits_row = -1;
    rows += seg.n;
  }
  if (rows > s_.rows) fail("internal error: a forward step of ", rows, " rows exceeds the scratch of ", s_.rows);
  embed(rows);

  // From the first KV-shared layer on, only the rows that want logits matter (see
  // SessionOptions::full_prefill): they move to the front of their segment's rows.
  const int first_shared = cfg_.num_kv_shared_layers > 0 ? cfg_.first_shared_layer() : cfg_.num_layers;
  for (int l = 0; l < cfg_.num_layers; ++l) {
    if (l == first_shared) {
      drop_prompt_rows();
      rows = 0;
      for (const ForwardSegment& seg : segs_) rows += seg.n;
      if (rows == 0) return;  // no row wants logits: nothing past here is kept
    }
    attention_block(l, rows);
    mlp_block(l, rows);
  }
  finish(rows);
}

void ForwardPass::embed(int rows) {
  using namespace kernels;
  ParallelFor* pool = model_.pool();
  const int H = cfg_.hidden_size;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);

  // Token embeddings, scaled by sqrt(hidden_size) computed in float32.
  gather_rows(w_.embed_tokens, s_.ids.data(), rows, 0, H, std::sqrt(static_cast<float>(H)), s_.h.data());
  // Soft tokens (images, audio) replace their rows, unscaled (Session::set_embedding_overrides),
  // before the per-layer projection reads them.
  for (const ForwardSegment& seg : segs_) {
    const std::span<const EmbeddingOverride> ov = seg.session->overrides_;
    if (ov.empty()) continue;
    for (int i = 0; i < seg.n; ++i) {
      const std::int64_t p = s_.pos[static_cast<std::size_t>(seg.first_row + i)];
      auto it = std::lower_bound(ov.begin(), ov.end(), p,
                                 [](const EmbeddingOverride& o, std::int64_t q) { return o.position < q; });
      if (it != ov.end() && it->position == p) std::copy_n(it->row, H, s_.h.data() + row_offset(seg.first_row + i, H));
    }
  }

  // Per-layer inputs: a projection of the scaled embedding plus the per-layer token table.
  const int P = cfg_.ple_dim, LP = cfg_.num_layers * cfg_.ple_dim;
  if (P > 0) {
    matmul(w_.ple_model_projection, s_.h.data(), rows, s_.ple_all.data(), pool);
    const float proj_scale = 1.0f / std::sqrt(static_cast<float>(H));
    const float tok_scale = std::sqrt(static_cast<float>(P));
    const float mix = 1.0f / std::sqrt(2.0f);
    // Row by row and each row alone, so a prefill chunk's rows are split over the threads
    // (E2B: 35 x 256 table values, norms and mixes per row) with the serial loop's bits.
    auto ple_rows = [&](std::int64_t t0, std::int64_t t1) {
      const int b = static_cast<int>(t0), e = static_cast<int>(t1);
      gather_rows(w_.embed_tokens_ple, s_.ids.data() + b, e - b, 0, LP, tok_scale, s_.ple_tok.data() + row_offset(b, LP));
      for (int t = b; t < e; ++t)
        for (int l = 0; l < cfg_.num_layers; ++l) {
          float* ctx = s_.ple_all.data() + row_offset(t, LP) + static_cast<std::size_t>(l) * P;
          const float* tok = s_.ple_tok.data() + row_offset(t, LP) + static_cast<std::size_t>(l) * P;
          scale_inplace(ctx, P, proj_scale);
          rms_norm(ctx, w_.ple_projection_norm.data(), P, eps, ctx);
          for (int j = 0; j < P; ++j) ctx[j] = (ctx[j] + tok[j]) * mix;
        }
    };
    if (pool && rows > 1) pool->run(rows, ple_rows);
    else ple_rows(0, rows);
  }

  // The rows are copied out: give the table pages back (see Model::release_gather_pages).
  model_.release_gather_pages();

  // Rotation angles per row, per attention kind.
  for (int t = 0; t < rows; ++t) {
    if (!cfg_.rope_sliding.inv_freq.empty())
      rope_angles(cfg_.rope_sliding.inv_freq.data(), cfg_.head_dim / 2, s_.pos[t],
                  s_.rope_sliding.data() + row_offset(t, cfg_.head_dim));
    if (!cfg_.rope_full.inv_freq.empty())
      rope_angles(cfg_.rope_full.inv_freq.data(), cfg_.global_head_dim / 2, s_.pos[t],
                  s_.rope_full.data() + row_offset(t, cfg_.global_head_dim));
  }
}

void ForwardPass::drop_prompt_rows() {
  // Every per-row buffer the later layers read: hidden states, per-layer inputs, angles,
  // positions. Rows only move towards the front, so an in-place forward copy is safe.
  auto move_rows = [](auto& buf, std::size_t width, int from, int count, int to) {
    if (buf.empty() || from == to) return;
    std::copy(buf.begin() + static_cast<std::ptrdiff_t>(from * width),
              buf.begin() + static_cast<std::ptrdiff_t>((from + count) * width),
              buf.begin() + static_cast<std::ptrdiff_t>(to * width));
  };
  const std::size_t H = static_cast<std::size_t>(cfg_.hidden_size);
  const std::size_t LP = static_cast<std::size_t>(cfg_.num_layers) * cfg_.ple_dim;
  const std::size_t DS = static_cast<std::size_t>(cfg_.head_dim), DF = static_cast<std::size_t>(cfg_.global_head_dim);
  int dst = 0;
  for (ForwardSegment& seg : segs_) {
    int drop = seg.session->full_prefill_ ? 0 : std::min(seg.first_logits_row, seg.n);
    const int keep = seg.n - drop;
    const int from = seg.first_row + drop;
    move_rows(s_.h, H, from, keep, dst);
    if (cfg_.ple_dim > 0) move_rows(s_.ple_all, LP, from, keep, dst);
    if (!cfg_.rope_sliding.inv_freq.empty()) move_rows(s_.rope_sliding, DS, from, keep, dst);
    if (!cfg_.rope_full.inv_freq.empty()) move_rows(s_.rope_full, DF, from, keep, dst);
    move_rows(s_.pos, 1, from, keep, dst);
    seg.first_row = dst;
    seg.n = keep;
    if (seg.row_chunk) seg.row_chunk += drop;
    seg.first_logits_row -= drop;
    dst += keep;
  }
}

void ForwardPass::attention_block(int l, int rows) {
  using namespace kernels;
  ParallelFor* pool = model_.pool();
  const LayerConfig& L = cfg_.layers[l];
  const LayerWeights& lw = w_.layers[l];
  const int H = cfg_.hidden_size, d = L.head_dim, nh = cfg_.num_heads, nkv = L.n_kv_heads;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  const bool sliding = L.kind == AttentionKind::Sliding;
  const float* rope = sliding ? s_.rope_sliding.data() : s_.rope_full.data();

  for_row_slices(pool, rows, [&](int t0, int t1) { norm_rows(s_.h.data(), lw.input_norm.data(), H, eps, s_.a.data(), t0, t1); });
  if (L.owns_kv) {  // q, k and v read the same normed input: one quantization, one pool call
    const WeightMatrix* ws[] = {&lw.q_proj, &lw.k_proj, &lw.v_proj};
    float* outs[] = {s_.q.data(), s_.k.data(), s_.v.data()};
    matmul_shared_input(ws, outs, 3, s_.a.data(), rows, pool);
  } else {
    matmul(lw.q_proj, s_.a.data(), rows, s_.q.data(), pool);
  }
  for_row_slices(pool, rows, [&](int t0, int t1) {
    // The q heads of rows t0..t1 are (t1 - t0) * nh consecutive rows of d.
    norm_rows(s_.q.data(), lw.q_norm.data(), d, eps, s_.q.data(), t0 * nh, t1 * nh);
    for (int t = t0; t < t1; ++t)
      for (int h = 0; h < nh; ++h)
        rope_apply(s_.q.data() + (static_cast<std::size_t>(t) * nh + h) * d, d, rope + row_offset(t, d));
  });

  const int window = sliding ? cfg_.sliding_window : 0;
  s_.attend_rows.clear();
  for (const ForwardSegment& seg : segs_) {
    if (seg.n == 0) continue;
    Session& session = *seg.session;
    kv::LayerCache& cache = session.cache_.layer(session.cache_index_[l]);
    const std::int64_t* positions = s_.pos.data() + seg.first_row;
    if (L.owns_kv) {
      for (int i = 0; i < seg.n; ++i) {
        const int t = seg.first_row + i;
        const int slot = cache.slot_of(positions[i]);
        float* kt = s_.k.data() + static_cast<std::size_t>(t) * nkv * d;
        float* vt = s_.v.data() + static_cast<std::size_t>(t) * nkv * d;
        for (int g = 0; g < nkv; ++g) {
          float* kg = kt + static_cast<std::size_t>(g) * d;
          rms_norm(kg, lw.k_norm.data(), d, eps, kg);
          rope_apply(kg, d, rope + row_offset(t, d));
          rms_norm(vt + static_cast<std::size_t>(g) * d, nullptr, d, eps, vt + static_cast<std::size_t>(g) * d);
        }
        cache.write(slot, kt, vt);  // f16 caches round here (kv_cache.h)
        cache.set_position(slot, positions[i]);
      }
    }

    // Every query of the segment sees the segment's keys through the causal position test.
    // The tiled kernel reads each K/V tile once for all the segment's tokens and heads;
    // decode splits the slots over the pool (kernels/attention.h, docs/attention.md).
    const float* q = s_.q.data() + static_cast<std::size_t>(seg.first_row) * nh * d;
    float* out = s_.attn.data() + static_cast<std::size_t>(seg.first_row) * nh * d;
    const KvSlots view = cache.view();
    if (seg.row_chunk && !model_.options().reference_attention) {
      for (int i = 0; i < seg.n; ++i) {
        KvSlots vi = view;
        if (!cache.is_ring()) vi.n_slots = static_cast<int>(std::min<std::int64_t>(vi.n_slots, positions[i] + 1));
        const float* qi = q + static_cast<std::size_t>(i) * nh * d;
        float* oi = out + static_cast<std::size_t>(i) * nh * d;
        if (seg.row_chunk[i]) attend(qi, 1, positions + i, nh, vi, window, 1.0f, oi, nullptr);
        else if (!attend_splits_slots(vi, pool)) s_.attend_rows.push_back({qi, positions + i, vi, oi});
        else attend(qi, 1, positions + i, nh, vi, window, 1.0f, oi, pool);
      }
    } else if (!model_.options().reference_attention) {
      // A decode row whose cache is too short for attend to split: gathered with the other
      // sequences' and run in one pool call below (the same bits as attend here).
      if (seg.n == 1 && !attend_splits_slots(view, pool)) s_.attend_rows.push_back({q, positions, view, out});
      else attend(q, seg.n, positions, nh, view, window, 1.0f, out, pool);
    } else {
      // ModelOptions::reference_attention: the float reference kernel one token at a time (A/B checks).
      KvSlots whole = view;
      whole.n_slots = cache.spec().n_slots;  // scratch sized for the whole cache once
      const std::size_t scratch = attend_scratch_floats(nh, whole);
      auto run = [&](std::int64_t begin, std::int64_t end) {
        thread_local std::vector<float> scores;
        if (scores.size() < scratch) scores.resize(scratch);
        for (std::int64_t t = begin; t < end; ++t)
          attend_one(q + static_cast<std::size_t>(t) * nh * d, nh, positions[t], view, window, 1.0f, scores.data(),
                     out + static_cast<std::size_t>(t) * nh * d);
      };
      if (pool) pool->run(seg.n, run);
      else run(0, seg.n);
    }
  }

  kernels::attend_rows(s_.attend_rows.data(), s_.attend_rows.size(), nh, window, 1.0f, pool);

  matmul(lw.o_proj, s_.attn.data(), rows, s_.o.data(), pool);
  for_row_slices(pool, rows, [&](int t0, int t1) {
    norm_rows(s_.o.data(), lw.post_attention_norm.data(), H, eps, s_.o.data(), t0, t1);
    for (int t = t0; t < t1; ++t) add_inplace(s_.h.data() + row_offset(t, H), s_.o.data() + row_offset(t, H), H);
  });
}

void ForwardPass::mlp_block(int l, int rows) {
  using namespace kernels;
  ParallelFor* pool = model_.pool();
  const LayerConfig& L = cfg_.layers[l];
  const LayerWeights& lw = w_.layers[l];
  const int H = cfg_.hidden_size;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);

  for_row_slices(pool, rows,
                 [&](int t0, int t1) { norm_rows(s_.h.data(), lw.pre_feedforward_norm.data(), H, eps, s_.a.data(), t0, t1); });
  {
    const WeightMatrix* ws[] = {&lw.gate_proj, &lw.up_proj};
    float* outs[] = {s_.gate.data(), s_.up.data()};
    matmul_shared_input(ws, outs, 2, s_.a.data(), rows, pool);
  }
  {
    // Element-wise, so split by tokens over the threads (a prefill chunk has up to
    // 64 x 12288 of them).
    const std::size_t W = static_cast<std::size_t>(L.mlp_width);
    auto gelu_rows = [&](std::int64_t t0, std::int64_t t1) {
      const std::size_t off = static_cast<std::size_t>(t0) * W;
      gelu_mul(s_.gate.data() + off, s_.up.data() + off, static_cast<int>(static_cast<std::size_t>(t1 - t0) * W),
               s_.gate.data() + off);
    };
    if (pool && rows > 1) pool->run(rows, gelu_rows);
    else gelu_rows(0, rows);
  }
  matmul(lw.down_proj, s_.gate.data(), rows, s_.o.data(), pool);
  for_row_slices(pool, rows, [&](int t0, int t1) {
    norm_rows(s_.o.data(), lw.post_feedforward_norm.data(), H, eps, s_.o.data(), t0, t1);
    for (int t = t0; t < t1; ++t) add_inplace(s_.h.data() + row_offset(t, H), s_.o.data() + row_offset(t, H), H);
  });

  // Per-layer-embedding block.
  const int P = cfg_.ple_dim, LP = cfg_.num_layers * cfg_.ple_dim;
  if (P > 0) {
    matmul(lw.ple_gate, s_.h.data(), rows, s_.ple_g.data(), pool);
    for_rows(pool, rows, [&](int t) {
      float* g = s_.ple_g.data() + row_offset(t, P);
      const float* in = s_.ple_all.data() + row_offset(t, LP) + static_cast<std::size_t>(l) * P;
      gelu_mul(g, in, P, g);
    });
    matmul(lw.ple_projection, s_.ple_g.data(), rows, s_.o.data(), pool);
    // The layer scalar is element-wise: per row here, the same products as one call over all rows.
    for_row_slices(pool, rows, [&](int t0, int t1) {
      norm_rows(s_.o.data(), lw.post_ple_norm.data(), H, eps, s_.o.data(), t0, t1);
      for (int t = t0; t < t1; ++t) {
        add_inplace(s_.h.data() + row_offset(t, H), s_.o.data() + row_offset(t, H), H);
        scale_inplace(s_.h.data() + row_offset(t, H), H, lw.layer_scalar);
      }
    });
    return;
  }
  scale_inplace(s_.h.data(), static_cast<std::int64_t>(rows) * H, lw.layer_scalar);
}

void ForwardPass::finish(int) {
  using namespace kernels;
  const int H = cfg_.hidden_size;
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  // Final norm for the rows that want the hidden state, gathered to the front of a_; the last
  // one of each segment is kept in its session for the deferred head calls.
  int head_rows = 0;
  bool argmax_only = s_.greedy_head != nullptr;
  for (ForwardSegment& seg : segs_) {
    const int want = seg.n - seg.first_logits_row;
    if (want <= 0) continue;
    // Head rows stay contiguous: a Hidden segment's rows are overwritten by the next segment.
    float* first = s_.a.data() + row_offset(head_rows, H);
    for (int i = 0; i < want; ++i)
      rms_norm(s_.h.data() + row_offset(seg.first_row + seg.first_logits_row + i, H), w_.final_norm.data(), H, eps,
               first + row_offset(i, H));
    if (seg.hidden_sum)
      for (int i = 0; i < want; ++i) add_inplace(seg.hidden_sum, first + row_offset(i, H), H);
    std::copy_n(first + row_offset(want - 1, H), H, seg.session->head_in_.data());
    seg.session->hidden_valid_ = true;
    if (!seg.run_head) continue;
    argmax_only &= seg.argmax_only;
    seg.logits_row = head_rows;
    head_rows += want;
  }
  if (head_rows == 0) return;
  if (argmax_only) return s_.greedy_head->run(s_.a.data(), head_rows, logits_, model_.pool());
  matmul(w_.lm_head, s_.a.data(), head_rows, logits_, model_.pool());
  if (cfg_.final_logit_softcapping > 0)
    soft_cap(logits_, static_cast<std::int64_t>(head_rows) * cfg_.vocab_size,
             static_cast<float>(cfg_.final_logit_softcapping), model_.pool());
}

}  // namespace ringlm::model::detail
