#include "kernels/attention.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/attention_table.h"
#include "kernels/dispatch.h"
#include "util/error.h"

namespace ringlm::kernels {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Decode splits the slots over the participants only when each gets at least this many:
// below it the partial states and the merge cost more than the split saves.
constexpr int kMinSlotsPerPart = 128;

const AttentionKernels& active_attention() {
  switch (active_isa()) {
#if defined(__x86_64__)
    case Isa::avx2:
    case Isa::avxvnni: return kAttnAvx2;  // no integer dots in attention: the AVX2 kernels
    case Isa::avx512:
    case Isa::avx512vnni:
    case Isa::amx: return kAttnAvx512;
#endif
#if defined(__aarch64__)
    case Isa::neon:
    case Isa::neon_dotprod: return kAttnNeon;  // no integer dots in attention: same kernels
#endif
    default: return kAttnScalar;
  }
}

// Per calling thread, grown to the largest size seen and then reused: after the first
// decode step at a given context nothing is allocated.
float* scratch_floats(std::size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

void check_shapes(int n_tokens, int n_heads, const KvSlots& kv) {
  if (n_tokens < 0) fail("attend: negative token count ", n_tokens);
  if (kv.n_kv_heads < 1 || kv.head_dim < 1 || kv.n_slots < 0)
    fail("attend: bad cache view (", kv.n_kv_heads, " kv heads, head_dim ", kv.head_dim, ", ", kv.n_slots, " slots)");
  if (n_heads < kv.n_kv_heads || n_heads % kv.n_kv_heads != 0)
    fail("attend: ", n_heads, " query heads is not a multiple of ", kv.n_kv_heads, " kv heads");
  const bool half = kv.type == KvType::f16;
  if (kv.n_slots > 0 && (kv.pos == nullptr || (half ? kv.k16 == nullptr || kv.v16 == nullptr
                                                     : kv.k == nullptr || kv.v == nullptr)))
    fail("attend: cache view with ", kv.n_slots, " slots has no keys, values or positions");
}

void init_rows(float* acc, float* m, float* l, std::size_t rows, int d) {
  std::fill(acc, acc + rows * static_cast<std::size_t>(d), 0.0f);
  std::fill(m, m + rows, kNegInf);
  std::fill(l, l + rows, 0.0f);
}

// Decode: participant p scans slots [p/P, (p+1)/P) of the cache (on tile boundaries) for all
// heads into its own partial state; the caller then merges the P states per head:
// out = sum_p e^(m_p - M) acc_p / sum_p e^(m_p - M) l_p with M = max_p m_p.
void attend_split_slots(const AttentionKernels& k, const AttnBlock& base, int parts, float* out, ParallelFor& pool) {
  const auto run_block = base.kv.type == KvType::f16 ? k.block16 : k.block;
  const int nh = base.n_heads, d = base.kv.head_dim, nkv = base.kv.n_kv_heads;
  const std::size_t part_floats = static_cast<std::size_t>(nh) * d + 2 * static_cast<std::size_t>(nh);
  float* states = scratch_floats(part_floats * parts + 2 * static_cast<std::size_t>(parts));
  const int tiles = (base.kv.n_slots + kAttnTile - 1) / kAttnTile;
  pool.run(parts, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t p = b; p < e; ++p) {
      float* acc = states + part_floats * p;
      float* m = acc + static_cast<std::size_t>(nh) * d;
      float* l = m + nh;
      init_rows(acc, m, l, nh, d);
      AttnBlock blk = base;
      blk.t_begin = 0;
      blk.t_end = 1;
      blk.s_begin = static_cast<int>(tiles * p / parts) * kAttnTile;
      blk.s_end = std::min(base.kv.n_slots, static_cast<int>(tiles * (p + 1) / parts) * kAttnTile);
      blk.acc = acc;
      blk.m = m;
      blk.l = l;
      for (int g = 0; g < nkv; ++g) {
        blk.kv_head = g;
        run_block(blk);
      }
    }
  });
  float* diff = states + part_floats * parts;  // [parts] exponents, then [parts] weights
  float* w = diff + parts;
  for (int h = 0; h < nh; ++h) {
    float mx = kNegInf;
    for (int p = 0; p < parts; ++p) mx = std::max(mx, states[part_floats * p + static_cast<std::size_t>(nh) * d + h]);
    float* oh = out + static_cast<std::size_t>(h) * d;
    std::fill(oh, oh + d, 0.0f);
    if (mx == kNegInf) continue;  // nothing visible to this head
    for (int p = 0; p < parts; ++p) diff[p] = states[part_floats * p + static_cast<std::size_t>(nh) * d + h] - mx;
    k.exp_n(diff, w, static_cast<std::size_t>(parts));
    float den = 0.0f;
    for (int p = 0; p < parts; ++p) den += w[p] * states[part_floats * p + static_cast<std::size_t>(nh) * d + nh + h];
    const float inv = 1.0f / den;
    for (int p = 0; p < parts; ++p) {
      if (w[p] == 0.0f) continue;
      const float c = w[p] * inv;
      const float* acc = states + part_floats * p + static_cast<std::size_t>(h) * d;
      for (int i = 0; i < d; ++i) oh[i] += c * acc[i];
    }
  }
}

}  // namespace

void attend(const float* q, int n_tokens, const std::int64_t* q_pos, int n_heads, const KvSlots& kv, int window,
            float scale, float* out, ParallelFor* pool) {
  check_shapes(n_tokens, n_heads, kv);
  if (n_tokens == 0) return;
  const AttentionKernels& k = active_attention();
  const auto run_block = kv.type == KvType::f16 ? k.block16 : k.block;
  const int d = kv.head_dim, nkv = kv.n_kv_heads;
  AttnBlock base;
  base.q = q;
  base.q_pos = q_pos;
  base.n_heads = n_heads;
  base.group = n_heads / nkv;
  base.kv = kv;
  base.s_begin = 0;
  base.s_end = kv.n_slots;
  base.window = window;
  base.scale = scale;

  const int threads = pool ? pool->size() : 1;
  const int parts = std::min(threads, kv.n_slots / kMinSlotsPerPart);
  if (n_tokens == 1 && threads > 1) {
    // Size the split's scratch on the first decode call even while the cache is still too
    // short to split, so a context growing past the threshold does not allocate mid-decode.
    scratch_floats(static_cast<std::size_t>(threads) * (static_cast<std::size_t>(n_heads) * d + 2 * n_heads) +
                   2 * static_cast<std::size_t>(threads));
  }
  if (n_tokens == 1 && parts > 1) {
    attend_split_slots(k, base, parts, out, *pool);
    return;
  }

  // A chunk (or a short decode): units are (KV head, token) pairs, token-major within a KV
  // head, so a participant's share is a run of tokens that reuse each K/V tile it loads.
  const std::size_t rows = static_cast<std::size_t>(n_tokens) * n_heads;
  // A decode row's running max and sum (2 floats a head) live on the stack: attend_rows runs
  // each row on whichever pool thread claims it, where a per-thread buffer could first grow
  // in the middle of decoding (tests/model/decode_allocation_test.cpp).
  constexpr std::size_t kStackRows = 256;
  float ml_stack[2 * kStackRows];
  float* ml = rows <= kStackRows ? ml_stack : scratch_floats(2 * rows);
  base.acc = out;
  base.m = ml;
  base.l = ml + rows;
  auto run_units = [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t u = b; u < e;) {
      const int g = static_cast<int>(u / n_tokens);
      const int t0 = static_cast<int>(u % n_tokens);
      const int t1 = static_cast<int>(std::min<std::int64_t>(n_tokens, t0 + (e - u)));
      AttnBlock blk = base;
      blk.kv_head = g;
      blk.t_begin = t0;
      blk.t_end = t1;
      for (int t = t0; t < t1; ++t) {
        const std::size_t row = static_cast<std::size_t>(t) * n_heads + static_cast<std::size_t>(g) * blk.group;
        init_rows(out + row * d, blk.m + row, blk.l + row, blk.group, d);
      }
      run_block(blk);
      for (int t = t0; t < t1; ++t)
        for (int j = 0; j < blk.group; ++j) {
          const std::size_t row = static_cast<std::size_t>(t) * n_heads + static_cast<std::size_t>(g) * blk.group + j;
          if (blk.l[row] == 0.0f) continue;  // nothing visible: the row stays zero
          const float inv = 1.0f / blk.l[row];
          float* o = out + row * d;
          for (int i = 0; i < d; ++i) o[i] *= inv;
        }
      u += t1 - t0;
    }
  };
  const std::int64_t units = static_cast<std::int64_t>(nkv) * n_tokens;
  if (pool && threads > 1) pool->run(units, run_units);
  else run_units(0, units);
}

bool attend_splits_slots(const KvSlots& kv, const ParallelFor* pool) {
  const int threads = pool ? pool->size() : 1;
  return threads > 1 && std::min(threads, kv.n_slots / kMinSlotsPerPart) > 1;
}

void attend_rows(const AttendRow* rows, std::size_t n, int n_heads, int window, float scale, ParallelFor* pool) {
  for (std::size_t i = 0; i < n; ++i) {
    check_shapes(1, n_heads, rows[i].kv);
    if (attend_splits_slots(rows[i].kv, pool)) fail("attend_rows: row ", i, " has a cache long enough to split; use attend");
  }
  if (n == 0) return;
  const int threads = pool ? pool->size() : 1;
  if (threads > 1) {
    // As attend's decode: size the calling thread's split scratch before any split is needed.
    const std::size_t d = static_cast<std::size_t>(rows[0].kv.head_dim);
    scratch_floats(static_cast<std::size_t>(threads) * (static_cast<std::size_t>(n_heads) * d + 2 * n_heads) +
                   2 * static_cast<std::size_t>(threads));
  }
  // Without a pool attend runs its (KV head) units in order on this thread: the same
  // operations per unit as any split of them, so the same bits as attend with the pool.
  auto run = [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const AttendRow& r = rows[i];
      attend(r.q, 1, r.q_pos, n_heads, r.kv, window, scale, r.out, nullptr);
    }
  };
  if (pool && threads > 1 && n > 1) pool->run(static_cast<std::int64_t>(n), run);
  else run(0, static_cast<std::int64_t>(n));
}

void attend_dense(const float* q, int n_queries, const float* k, const float* v, int n_keys, int n_heads,
                  int n_kv_heads, int head_dim, float scale, float* out, ParallelFor* pool) {
  if (n_queries < 0 || n_keys < 0 || head_dim < 1 || n_kv_heads < 1 || n_heads < n_kv_heads ||
      n_heads % n_kv_heads != 0)
    fail("attend_dense: bad shape (", n_queries, " queries, ", n_keys, " keys, ", n_heads, " heads on ", n_kv_heads,
         " kv heads, head_dim ", head_dim, ")");
  if (n_queries == 0) return;
  if (q == nullptr || out == nullptr || (n_keys > 0 && (k == nullptr || v == nullptr)))
    fail("attend_dense: null query, key, value or output pointer");
  const AttentionKernels& kern = active_attention();
  const int d = head_dim, tiles = (n_keys + kDenseKeys - 1) / kDenseKeys;
  const std::int64_t kv_stride = static_cast<std::int64_t>(n_kv_heads) * d;
  const std::size_t tile_floats = static_cast<std::size_t>(d) * kDenseKeys;
  const std::size_t head_floats = tile_floats * static_cast<std::size_t>(tiles);
  // K transposed per (KV head, tile): [n_kv_heads][tiles][d][kDenseKeys], zero past n_keys.
  std::vector<float> kt(head_floats * static_cast<std::size_t>(n_kv_heads));
  auto pack = [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t u = b; u < e; ++u) {
      const int g = static_cast<int>(u / tiles), t = static_cast<int>(u % tiles);
      float* dst = kt.data() + head_floats * g + tile_floats * t;
      const int s0 = t * kDenseKeys, ts = std::min(kDenseKeys, n_keys - s0);
      for (int s = 0; s < ts; ++s) {
        const float* src = k + (s0 + s) * kv_stride + static_cast<std::int64_t>(g) * d;
        for (int c = 0; c < d; ++c) dst[static_cast<std::size_t>(c) * kDenseKeys + s] = src[c];
      }
    }
  };
  const int threads = pool ? pool->size() : 1;
  const std::int64_t pack_units = static_cast<std::int64_t>(n_kv_heads) * tiles;
  if (threads > 1) pool->run(pack_units, pack);
  else pack(0, pack_units);

  // Units (head, query block), head-major: a participant's run of units shares one packed K.
  const int blocks = (n_queries + kDenseQueries - 1) / kDenseQueries, group = n_heads / n_kv_heads;
  const std::int64_t q_stride = static_cast<std::int64_t>(n_heads) * d;
  auto run = [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t u = b; u < e; ++u) {
      const int h = static_cast<int>(u / blocks), i0 = static_cast<int>(u % blocks) * kDenseQueries;
      const int g = h / group;
      DenseBlock blk;
      blk.q = q + i0 * q_stride + static_cast<std::int64_t>(h) * d;
      blk.kt = kt.data() + head_floats * g;
      blk.v = v == nullptr ? nullptr : v + static_cast<std::int64_t>(g) * d;
      blk.out = out + i0 * q_stride + static_cast<std::int64_t>(h) * d;
      blk.rows = std::min(kDenseQueries, n_queries - i0);
      blk.n_keys = n_keys;
      blk.head_dim = d;
      blk.q_stride = blk.out_stride = q_stride;
      blk.v_stride = kv_stride;
      blk.scale = scale;
      kern.dense(blk);
    }
  };
  const std::int64_t units = static_cast<std::int64_t>(n_heads) * blocks;
  if (threads > 1) pool->run(units, run);
  else run(0, units);
}

void attention_exp(const float* x, float* y, std::size_t n) { active_attention().exp_n(x, y, n); }

void kv_store_f16(const float* x, std::uint16_t* y, std::size_t n) { active_attention().store_f16(x, y, n); }
void kv_widen_f16(const std::uint16_t* x, float* y, std::size_t n) { active_attention().widen_f16(x, y, n); }

}  // namespace ringlm::kernels
