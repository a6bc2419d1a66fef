#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/attention.h"
#include "util/error.h"

namespace ringlm::kv {

const char* kv_type_name(KvType t) { return t == KvType::f16 ? "f16" : "f32"; }

KvType parse_kv_type(std::string_view name) {
  if (name == "f16") return KvType::f16;
  if (name == "f32") return KvType::f32;
  fail("unknown KV cache type '", std::string(name), "' (expected f16 or f32)");
}

LayerCache::LayerCache(const LayerCacheSpec& spec)
    : spec_(spec), row_(static_cast<std::int64_t>(spec.n_kv_heads) * spec.head_dim), pos_(std::max(0, spec.n_slots), -1) {
  if (spec.n_slots <= 0 || spec.head_dim <= 0 || spec.n_kv_heads <= 0) fail("KV cache: invalid layer geometry");
  const std::size_t n = spec.host_storage ? static_cast<std::size_t>(row_) * spec.n_slots : 0;
  if (spec.type == KvType::f16) {
    k16_.resize(n);
    v16_.resize(n);
  } else {
    k_.resize(n);
    v_.resize(n);
  }
}

void LayerCache::write(int slot, const float* k_row, const float* v_row) {
  const std::size_t off = static_cast<std::size_t>(slot) * row_, n = static_cast<std::size_t>(row_);
  if (spec_.type == KvType::f16) {
    kernels::kv_store_f16(k_row, k16_.data() + off, n);
    kernels::kv_store_f16(v_row, v16_.data() + off, n);
  } else {
    std::memcpy(k_.data() + off, k_row, n * sizeof(float));
    std::memcpy(v_.data() + off, v_row, n * sizeof(float));
  }
}

std::size_t LayerCache::bytes() const {
  return 2 * kv_type_bytes(spec_.type) * static_cast<std::size_t>(row_) * static_cast<std::size_t>(spec_.n_slots);
}

void LayerCache::check_writable(std::span<const std::int64_t> positions) const {
  if (positions.empty()) return;
  const std::int64_t first = positions.front();
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const std::int64_t p = positions[i];
    if (p < 0) fail("position ", p, " is negative");
    if (i > 0 && p <= positions[i - 1]) fail("positions must be strictly increasing (", positions[i - 1], " then ", p, ")");
    if (!is_ring()) {
      if (p >= spec_.n_slots)
        fail("position ", p, " exceeds the KV cache capacity of ", spec_.n_slots,
             " tokens (raise --ctx, up to max_position_embeddings)");
      continue;
    }
    if (p > INT32_MAX) fail("position ", p, " is too large");
    // The slot's current occupant must be invisible to every query of this step.
    const std::int64_t old = pos_[slot_of(p)];
    const bool evicted_early = old >= 0 && old != p && old > first - spec_.window;
    // Two positions of this step that share a slot would also evict each other.
    const bool collides = i > 0 && p - first >= spec_.n_slots;
    if (evicted_early || collides)
      fail("sliding KV ring of ", spec_.n_slots, " slots cannot take positions ", first, "..", positions.back(),
           " (one step may span at most ", spec_.n_slots - spec_.window + 1, " positions)");
  }
}

void LayerCache::set_position(int slot, std::int64_t pos) {
  pos_[slot] = static_cast<std::int32_t>(pos);
  if (!is_ring()) used_slots_ = std::max(used_slots_, slot + 1);
}

kernels::KvSlots LayerCache::view() const {
  kernels::KvSlots s;
  s.k = k_.empty() ? nullptr : k_.data();
  s.v = v_.empty() ? nullptr : v_.data();
  s.type = spec_.type;
  s.k16 = k16_.empty() ? nullptr : k16_.data();
  s.v16 = v16_.empty() ? nullptr : v16_.data();
  s.pos = pos_.data();
  s.n_slots = is_ring() ? spec_.n_slots : used_slots_;
  s.n_kv_heads = spec_.n_kv_heads;
  s.head_dim = spec_.head_dim;
  return s;
}

void LayerCache::reset() {
  std::fill(pos_.begin(), pos_.end(), -1);
  used_slots_ = 0;
}

void LayerCache::check_truncate(std::int64_t n) const {
  if (n <= 0 || !is_ring()) return;
  for (int s = 0; s < spec_.n_slots; ++s) {
    const std::int64_t p = pos_[s];
    if (p < n) continue;
    // The latest position below n that maps to this slot was overwritten by p; a query at n
    // still needs it if it lies inside the window.
    const std::int64_t lost = p - ((p - (n - 1) + spec_.n_slots - 1) / spec_.n_slots) * spec_.n_slots;
    if (lost >= 0 && lost > n - spec_.window)
      fail("cannot roll the KV cache back to ", n, " positions: the sliding ring already overwrote position ", lost);
  }
}

void LayerCache::truncate(std::int64_t n) {
  check_truncate(n);
  if (n <= 0) {
    reset();
    return;
  }
  for (int s = 0; s < spec_.n_slots; ++s)
    if (pos_[s] >= n) pos_[s] = -1;
  if (!is_ring()) used_slots_ = static_cast<int>(std::min<std::int64_t>(used_slots_, n));
}

std::int64_t LayerCache::end_position() const {
  std::int64_t e = 0;
  for (int s = 0; s < (is_ring() ? spec_.n_slots : used_slots_); ++s) e = std::max<std::int64_t>(e, pos_[s] + 1);
  return e;
}

void LayerCache::check_copy_prefix(const LayerCache& src, std::int64_t n) const {
  const LayerCacheSpec& a = spec_;
  const LayerCacheSpec& b = src.spec_;
  if (a.n_kv_heads != b.n_kv_heads || a.head_dim != b.head_dim || a.n_slots != b.n_slots || a.window != b.window ||
      a.type != b.type)
    fail("KV cache: copying a prefix between caches of different geometry or element type");
  if (n < 0 || (!is_ring() && n > spec_.n_slots)) fail("KV cache: cannot copy a prefix of ", n, " positions");
  if (!is_ring()) {
    for (std::int64_t p = 0; p < n; ++p)
      if (src.pos_[p] != p) fail("KV cache: the source does not hold position ", p);
    return;
  }
  for (std::int64_t p = std::max<std::int64_t>(0, n - spec_.window); p < n; ++p)
    if (src.pos_[src.slot_of(p)] != p)
      fail("KV cache: the source's sliding ring no longer holds position ", p, " of a ", n, "-token prefix");
}

void LayerCache::copy_prefix_from(const LayerCache& src, std::int64_t n) {
  check_copy_prefix(src, n);
  reset();
  const int slots = is_ring() ? spec_.n_slots : static_cast<int>(n);
  for (int s = 0; s < slots; ++s) {
    const std::int64_t p = src.pos_[s];
    if (p < 0 || p >= n) continue;
    if (!spec_.host_storage) {  // the rows live on a device (model/device_kv.h copies them)
      set_position(s, p);
      continue;
    }
    const std::int64_t off = static_cast<std::int64_t>(s) * row_;
    if (spec_.type == KvType::f16) {  // bits copied as stored: the prefix is exactly what src computed
      std::copy_n(src.k16_.data() + off, row_, k16_.data() + off);
      std::copy_n(src.v16_.data() + off, row_, v16_.data() + off);
    } else {
      std::copy_n(src.k_.data() + off, row_, k_.data() + off);
      std::copy_n(src.v_.data() + off, row_, v_.data() + off);
    }
    set_position(s, p);
  }
}

void LayerCache::check_holds(std::int64_t from, std::int64_t n) const {
  for (std::int64_t p = from; p < from + n; ++p)
    if (p < 0 || (!is_ring() && p >= spec_.n_slots) || pos_[slot_of(p)] != p)
      fail("KV cache: position ", p, " is not held (exporting ", from, "..", from + n - 1, ")");
}

void LayerCache::export_rows(std::int64_t from, std::int64_t n, std::uint8_t* out) const {
  const std::size_t half = position_bytes() / 2;
  check_holds(from, n);
  if (!spec_.host_storage) fail("KV cache: exporting rows of a positions-only cache (the rows are on a device)");
  for (std::int64_t p = from; p < from + n; ++p) {
    const std::size_t off = static_cast<std::size_t>(slot_of(p)) * static_cast<std::size_t>(row_);
    const void* k = spec_.type == KvType::f16 ? static_cast<const void*>(k16_.data() + off) : k_.data() + off;
    const void* v = spec_.type == KvType::f16 ? static_cast<const void*>(v16_.data() + off) : v_.data() + off;
    std::memcpy(out, k, half);
    std::memcpy(out + half, v, half);
    out += 2 * half;
  }
}

void LayerCache::import_rows(std::int64_t from, std::int64_t n, const std::uint8_t* in) {
  const std::size_t half = position_bytes() / 2;
  for (std::int64_t p = from; p < from + n; ++p) {
    const int slot = slot_of(p);
    if (!spec_.host_storage) {  // positions only: the device cache takes the rows
      in += 2 * half;
      set_position(slot, p);
      continue;
    }
    const std::size_t off = static_cast<std::size_t>(slot) * static_cast<std::size_t>(row_);
    void* k = spec_.type == KvType::f16 ? static_cast<void*>(k16_.data() + off) : k_.data() + off;
    void* v = spec_.type == KvType::f16 ? static_cast<void*>(v16_.data() + off) : v_.data() + off;
    std::memcpy(k, in, half);
    std::memcpy(v, in + half, half);
    in += 2 * half;
    set_position(slot, p);
  }
}

KvCache::KvCache(const std::vector<LayerCacheSpec>& specs) {
  layers_.reserve(specs.size());
  for (const auto& s : specs) layers_.emplace_back(s);
}

void KvCache::check_writable(std::span<const std::int64_t> positions) const {
  for (const auto& l : layers_) l.check_writable(positions);
}

void KvCache::reset() {
  for (auto& l : layers_) l.reset();
}

void KvCache::truncate(std::int64_t n) {
  for (const auto& l : layers_) l.check_truncate(n);  // all or nothing
  for (auto& l : layers_) l.truncate(n);
}

void KvCache::copy_prefix_from(const KvCache& src, std::int64_t n) {
  if (src.layers_.size() != layers_.size()) fail("KV cache: copying a prefix between caches of different models");
  for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i].check_copy_prefix(src.layers_[i], n);
  for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i].copy_prefix_from(src.layers_[i], n);
}

std::size_t KvCache::position_bytes() const {
  std::size_t b = 0;
  for (const auto& l : layers_) b += l.position_bytes();
  return b;
}

void KvCache::export_rows(std::int64_t from, std::int64_t n, std::uint8_t* out) const {
  for (const auto& l : layers_) {
    l.export_rows(from, n, out);
    out += static_cast<std::size_t>(n) * l.position_bytes();
  }
}

void KvCache::import_rows(std::int64_t from, std::int64_t n, const std::uint8_t* in) {
  for (auto& l : layers_) {
    l.import_rows(from, n, in);
    in += static_cast<std::size_t>(n) * l.position_bytes();
  }
}

void KvCache::snapshot(std::int64_t end, KvSnapshot& out) const {
  out.end = end;
  out.k.resize(layers_.size());
  out.v.resize(layers_.size());
  out.k16.resize(layers_.size());
  out.v16.resize(layers_.size());
  out.pos.resize(layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& l = layers_[i];
    if (!l.is_ring()) continue;
    out.k[i] = l.keys();
    out.v[i] = l.values();
    out.k16[i] = l.keys16();
    out.v16[i] = l.values16();
    out.pos[i] = l.positions();
  }
}

void KvCache::restore(const KvSnapshot& snapshot) {
  if (snapshot.end < 0 || snapshot.k.size() != layers_.size()) fail("KV cache: restoring an empty or foreign snapshot");
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    auto& l = layers_[i];
    if (!l.is_ring()) {
      l.truncate(snapshot.end);
      continue;
    }
    if (!l.spec().host_storage) {  // positions only: the device restores the rows (model/device_kv.h)
      if (snapshot.pos[i].size() != l.positions().size()) fail("KV cache: snapshot geometry does not match layer ", i);
      std::copy(snapshot.pos[i].begin(), snapshot.pos[i].end(), l.positions().begin());
      continue;
    }
    if (snapshot.k[i].size() != l.keys().size() || snapshot.k16.size() != layers_.size() ||
        snapshot.k16[i].size() != l.keys16().size())
      fail("KV cache: snapshot geometry or element type does not match layer ", i);
    std::copy(snapshot.k[i].begin(), snapshot.k[i].end(), l.keys().begin());
    std::copy(snapshot.v[i].begin(), snapshot.v[i].end(), l.values().begin());
    std::copy(snapshot.k16[i].begin(), snapshot.k16[i].end(), l.keys16().begin());
    std::copy(snapshot.v16[i].begin(), snapshot.v16[i].end(), l.values16().begin());
    std::copy(snapshot.pos[i].begin(), snapshot.pos[i].end(), l.positions().begin());
  }
}

std::size_t KvCache::bytes() const {
  std::size_t b = 0;
  for (const auto& l : layers_) b += l.bytes();
  return b;
}

}  // namespace ringlm::kv
