#include "vision/vision_tower.h"

#include <algorithm>
#include <cmath>

#include "io/mmproj.h"
#include "io/packed_towers.h"
#include "io/safetensors.h"
#include "kernels/attention.h"
#include "kernels/ref_matmul.h"
#include "kernels/ref_ops.h"
#include "util/error.h"

namespace ringlm::vision {
namespace {

using kernels::ParallelFor;

void clamp_rows(float* x, std::size_t n, float lo, float hi) {
  if (std::isinf(lo) && std::isinf(hi)) return;
  for (std::size_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], lo), hi);
}

// out = clamp(clamp(in) @ W^T): `in` is clamped in place (callers pass scratch they own).
void clipped_matmul(const ClippedLinear& l, float* in, int n, float* out, ParallelFor* pool) {
  clamp_rows(in, static_cast<std::size_t>(n) * l.w.cols, l.in_min, l.in_max);
  kernels::matmul(l.w, in, n, out, pool);
  clamp_rows(out, static_cast<std::size_t>(n) * l.w.rows, l.out_min, l.out_max);
}

// Bidirectional attention of every patch over every patch, scale 1 (q and k are RMS-normed):
// the batched attend_dense, or (reference) attend_one one patch at a time with every key in
// a slot at position 0, the kernel the tower ran before attend_dense and its test reference.
void self_attention(const float* q, const float* k, const float* v, int n, int NH, int NKV, int D, bool reference,
                    float* out, ParallelFor* pool) {
  if (!reference) {
    kernels::attend_dense(q, n, k, v, n, NH, NKV, D, 1.0f, out, pool);
    return;
  }
  const std::vector<std::int32_t> slot_pos(static_cast<std::size_t>(n), 0);
  const kernels::KvSlots slots{k, v, slot_pos.data(), n, NKV, D};
  const std::int64_t row = static_cast<std::int64_t>(NH) * D;
  pool->run(n, [&](std::int64_t b, std::int64_t e) {
    std::vector<float> scratch(kernels::attend_scratch_floats(NH, slots));
    for (std::int64_t i = b; i < e; ++i) kernels::attend_one(q + i * row, NH, 0, slots, 0, 1.0f, scratch.data(), out + i * row);
  });
}

}  // namespace

std::unique_ptr<VisionTower> VisionTower::load(const std::filesystem::path& dir, int threads,
                                               const std::filesystem::path& mmproj) {
  if (!mmproj.empty()) {
    auto file = io::open_mmproj(mmproj);
    auto cfg = vision_config_from_mmproj(*file);
    if (!cfg) return nullptr;
    return std::make_unique<VisionTower>(*cfg, std::make_unique<io::MmprojSource>(file), threads);
  }
  auto cfg = load_vision_config(dir);
  if (!cfg) return nullptr;
  if (std::filesystem::exists(dir / io::kPackedTowersFile))
    return std::make_unique<VisionTower>(*cfg, std::make_unique<io::PackedTowerSource>(dir / io::kPackedTowersFile),
                                         threads);
  if (!std::filesystem::exists(dir / "model.safetensors") && !std::filesystem::exists(dir / "model.safetensors.index.json"))
    fail(dir.string(), ": config.json has a vision_config but the directory has neither ", io::kPackedTowersFile,
         " nor Hugging Face safetensors to read the tower from");
  return std::make_unique<VisionTower>(*cfg, std::make_unique<io::SafetensorsSource>(dir, io::TensorSet::Towers),
                                       threads);
}

VisionTower::VisionTower(VisionConfig config, std::unique_ptr<io::TensorSource> source, int threads)
    : config_(std::move(config)), source_(std::move(source)) {
  weights_ = bind_vision_weights(config_, *source_);
  pool_ = std::make_unique<ParallelFor>(threads > 0 ? threads : kernels::default_thread_count());
  // Each spatial half of a head (head_dim / 2 channels) is its own rotate-half RoPE with
  // the default frequencies of that width: theta^(-2i / (head_dim / 2)).
  const int half = config_.head_dim / 2;
  for (int i = 0; i < half / 2; ++i)
    inv_freq_.push_back(1.0 / std::pow(config_.rope_theta, (2.0 * i) / static_cast<double>(half)));
}

std::vector<float> VisionTower::encode(const PatchGrid& g) const {
  const VisionConfig& c = config_;
  if (g.patch_size != c.patch_size || g.pooling_kernel != c.pooling_kernel_size)
    fail("vision encoder: patch grid of patch size ", g.patch_size, " / pooling ", g.pooling_kernel,
         " does not match the tower's ", c.patch_size, " / ", c.pooling_kernel_size);
  const int n = g.num_patches();
  const int H = c.hidden_size, D = c.head_dim, NH = c.num_heads, NKV = c.num_kv_heads, F = c.intermediate_size;
  const int k = c.pooling_kernel_size;
  if (n <= 0 || g.patches_w % k || g.patches_h % k) fail("vision encoder: the patch grid is not a whole number of pooling cells");
  if (std::max(g.patches_w, g.patches_h) > c.position_embedding_size)
    fail("vision encoder: a ", g.patches_w, "x", g.patches_h, " patch grid exceeds the position table (",
         c.position_embedding_size, " positions per axis)");
  const float eps = static_cast<float>(c.rms_norm_eps);
  ParallelFor* pool = pool_.get();
  const std::size_t N = static_cast<std::size_t>(n);

  // Patch embedding: pixels in [0, 1] -> [-1, 1], linear, plus the x and y table rows.
  std::vector<float> x(g.pixels.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 2.0f * (g.pixels[i] - 0.5f);
  std::vector<float> h(N * H);
  kernels::matmul(weights_.input_proj, x.data(), n, h.data(), pool);
  {
    std::vector<float> row(H);
    for (int i = 0; i < n; ++i) {
      const int px = i % g.patches_w, py = i / g.patches_w;
      kernels::load_row_f32(weights_.position_table, px, row.data());
      kernels::add_inplace(&h[i * H], row.data(), H);
      kernels::load_row_f32(weights_.position_table, c.position_embedding_size + py, row.data());
      kernels::add_inplace(&h[i * H], row.data(), H);
    }
  }

  // Rotary tables per patch: [n][half cos | half sin] for x, then for y.
  const int half = D / 2, quarter = D / 4;
  std::vector<float> rope(N * 2 * half);
  for (int i = 0; i < n; ++i) {
    kernels::rope_angles(inv_freq_.data(), quarter, i % g.patches_w, &rope[(2 * i) * half]);
    kernels::rope_angles(inv_freq_.data(), quarter, i / g.patches_w, &rope[(2 * i + 1) * half]);
  }

  std::vector<float> a(N * H), q(N * NH * D), kk(N * NKV * D), v(N * NKV * D), attn(N * NH * D), o(N * H);
  constexpr int kMlpRows = 256;  // the MLP runs in row blocks to bound its scratch
  std::vector<float> gate(static_cast<std::size_t>(kMlpRows) * F), up(static_cast<std::size_t>(kMlpRows) * F),
      m_in(static_cast<std::size_t>(kMlpRows) * H);

  for (const VisionLayerWeights& L : weights_.layers) {
    // --- attention ---
    for (int i = 0; i < n; ++i) kernels::rms_norm(&h[i * H], L.input_norm.data(), H, eps, &a[i * H]);
    {
      std::vector<float> a_copy = a;  // each clipped linear clamps its own input copy
      clipped_matmul(L.q_proj, a_copy.data(), n, q.data(), pool);
      a_copy = a;
      clipped_matmul(L.k_proj, a_copy.data(), n, kk.data(), pool);
      a_copy = a;
      clipped_matmul(L.v_proj, a_copy.data(), n, v.data(), pool);
    }
    pool->run(n, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) {
        const float* cs_x = &rope[(2 * i) * half];
        const float* cs_y = &rope[(2 * i + 1) * half];
        for (int hd = 0; hd < NH; ++hd) {
          float* qh = &q[(i * NH + hd) * D];
          kernels::rms_norm(qh, L.q_norm.data(), D, eps, qh);
          kernels::rope_apply(qh, half, cs_x);
          kernels::rope_apply(qh + half, half, cs_y);
        }
        for (int hd = 0; hd < NKV; ++hd) {
          float* kh = &kk[(i * NKV + hd) * D];
          kernels::rms_norm(kh, L.k_norm.data(), D, eps, kh);
          kernels::rope_apply(kh, half, cs_x);
          kernels::rope_apply(kh + half, half, cs_y);
          float* vh = &v[(i * NKV + hd) * D];
          kernels::rms_norm(vh, nullptr, D, eps, vh);
        }
      }
    });
    self_attention(q.data(), kk.data(), v.data(), n, NH, NKV, D, reference_attention_, attn.data(), pool);
    clipped_matmul(L.o_proj, attn.data(), n, o.data(), pool);
    for (int i = 0; i < n; ++i) {
      kernels::rms_norm(&o[i * H], L.post_attention_norm.data(), H, eps, &o[i * H]);
      kernels::add_inplace(&h[i * H], &o[i * H], H);
    }
    // --- MLP ---
    for (int r0 = 0; r0 < n; r0 += kMlpRows) {
      const int rows = std::min(kMlpRows, n - r0);
      for (int i = 0; i < rows; ++i)
        kernels::rms_norm(&h[(r0 + i) * H], L.pre_feedforward_norm.data(), H, eps, &m_in[i * H]);
      std::vector<float> m_copy(m_in.begin(), m_in.begin() + static_cast<std::ptrdiff_t>(rows) * H);
      clipped_matmul(L.gate_proj, m_copy.data(), rows, gate.data(), pool);
      clipped_matmul(L.up_proj, m_in.data(), rows, up.data(), pool);
      kernels::gelu_mul(gate.data(), up.data(), rows * F, gate.data());
      clipped_matmul(L.down_proj, gate.data(), rows, o.data(), pool);
      for (int i = 0; i < rows; ++i) {
        kernels::rms_norm(&o[i * H], L.post_feedforward_norm.data(), H, eps, &o[i * H]);
        kernels::add_inplace(&h[(r0 + i) * H], &o[i * H], H);
      }
    }
  }

  // Pooling: the mean of each k x k cell of the patch grid, cells in row-major order.
  const int cw = g.patches_w / k, ch = g.patches_h / k, tokens = cw * ch;
  std::vector<float> pooled(static_cast<std::size_t>(tokens) * H, 0.0f);
  for (int i = 0; i < n; ++i) {
    const int cell = (i % g.patches_w) / k + cw * ((i / g.patches_w) / k);
    kernels::add_inplace(&pooled[static_cast<std::size_t>(cell) * H], &h[i * H], H);
  }
  const float pool_scale = std::sqrt(static_cast<float>(H)) / static_cast<float>(k * k);
  for (std::size_t i = 0; i < pooled.size(); ++i) pooled[i] *= pool_scale;
  if (c.standardize)
    for (int t = 0; t < tokens; ++t)
      for (int j = 0; j < H; ++j)
        pooled[t * H + j] = (pooled[t * H + j] - weights_.std_bias[j]) * weights_.std_scale[j];

  // The embedder: scale-free RMS norm, then the projection to the text width.
  for (int t = 0; t < tokens; ++t) kernels::rms_norm(&pooled[t * H], nullptr, H, eps, &pooled[t * H]);
  std::vector<float> out(static_cast<std::size_t>(tokens) * c.text_hidden_size);
  kernels::matmul(weights_.embed_projection, pooled.data(), tokens, out.data(), pool);
  return out;
}

}  // namespace ringlm::vision
