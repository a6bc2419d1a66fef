// KV caches of the owning attention layers, allocated once per session.
//
// A sliding layer keeps a ring of `window + max_chunk` slots (slot = pos % ring): a chunk
// of at most max_chunk new tokens then overwrites only positions that no query of the chunk
// can see. A full layer keeps `capacity` slots (slot = pos). Each slot records the absolute
// position it holds (-1: empty) and attention reads only slots with valid positions, so a
// reset or a truncation never has to clear keys or values.
//
// Element type (LayerCacheSpec::type): f32, or f16 (IEEE binary16, half the bytes; rows are
// rounded to nearest even and saturated at +-65504 when written, widened exactly in the
// attention kernels). Write rows with write(); key()/value() are the f32 cache's storage.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/ref_ops.h"

namespace ringlm::kv {

using KvType = kernels::KvType;

// "f16" / "f32"; parse_kv_type throws ringlm::Error naming the accepted values.
const char* kv_type_name(KvType t);
KvType parse_kv_type(std::string_view name);
inline std::size_t kv_type_bytes(KvType t) { return t == KvType::f16 ? 2 : 4; }

struct LayerCacheSpec {
  int n_kv_heads = 1;
  int head_dim = 0;
  int n_slots = 0;   // ring size (sliding) or context capacity (full)
  int window = 0;    // > 0: sliding ring with this attention window; 0: full (slot = pos)
  KvType type = KvType::f32;
  // false: positions only, no K/V storage here (the K/V live on a compute device, see
  // model/device_kv.h); write() and view()'s rows must not be used; copy_prefix_from,
  // import_rows and restore() keep the positions only, export_rows throws.
  bool host_storage = true;
};

class LayerCache {
 public:
  explicit LayerCache(const LayerCacheSpec& spec);

  const LayerCacheSpec& spec() const { return spec_; }
  bool is_ring() const { return spec_.window > 0; }
  int slot_of(std::int64_t pos) const {
    return static_cast<int>(is_ring() ? pos % spec_.n_slots : pos);
  }
  // Throws ringlm::Error unless `positions` (strictly increasing, the queries of one step)
  // can be written without exceeding the capacity or evicting a position a query still sees.
  void check_writable(std::span<const std::int64_t> positions) const;

  KvType type() const { return spec_.type; }
  // Stores one slot's K and V rows (n_kv_heads * head_dim floats each), converting to the
  // cache's element type. Does not touch the slot's position (set_position).
  void write(int slot, const float* k_row, const float* v_row);
  // f32 caches only (null for f16): the slot's rows, to write in place.
  float* key(int slot) { return k_.empty() ? nullptr : k_.data() + static_cast<std::int64_t>(slot) * row_; }
  float* value(int slot) { return v_.empty() ? nullptr : v_.data() + static_cast<std::int64_t>(slot) * row_; }
  void set_position(int slot, std::int64_t pos);

  // The slots attention should scan (a full cache stops at its highest used slot).
  kernels::KvSlots view() const;

  void reset();
  // Forgets positions >= n. Throws if a sliding ring already overwrote a position in
  // [n - window, n) that the next query at position n would need.
  void truncate(std::int64_t n);
  void check_truncate(std::int64_t n) const;
  // Highest position held plus one (0 when empty).
  std::int64_t end_position() const;
  // Makes this cache hold exactly src's positions [0, n) (same geometry; slot contents
  // copied), as if those n tokens had been run here: another sequence's prompt prefix is
  // reused without recomputing it. Throws ringlm::Error (nothing changed) if the geometry
  // differs or a sliding ring of src no longer holds a position in [n - window, n).
  void copy_prefix_from(const LayerCache& src, std::int64_t n);
  void check_copy_prefix(const LayerCache& src, std::int64_t n) const;
  // Bytes of K and V storage (both), whatever the element type.
  std::size_t bytes() const;
  // Bytes of one position's K and V rows as stored (the prefix cache's unit).
  std::size_t position_bytes() const { return 2 * kv_type_bytes(spec_.type) * static_cast<std::size_t>(row_); }
  // Throws ringlm::Error unless every position in [from, from + n) is held.
  void check_holds(std::int64_t from, std::int64_t n) const;
  // Writes the K then V rows of each position in [from, from + n) to `out` (n *
  // position_bytes(), bits as stored). Throws ringlm::Error unless the cache holds them all.
  void export_rows(std::int64_t from, std::int64_t n, std::uint8_t* out) const;
  // Stores rows that export_rows wrote (same geometry and type) at positions [from, from + n),
  // in order, as if they had been computed here. The caller checks the positions are writable.
  void import_rows(std::int64_t from, std::int64_t n, const std::uint8_t* in);
  // Raw storage, for snapshots: keys()/values() hold an f32 cache (empty for f16),
  // keys16()/values16() an f16 one (empty for f32).
  std::vector<float>& keys() { return k_; }
  std::vector<float>& values() { return v_; }
  std::vector<std::uint16_t>& keys16() { return k16_; }
  std::vector<std::uint16_t>& values16() { return v16_; }
  std::vector<std::int32_t>& positions() { return pos_; }
  const std::vector<float>& keys() const { return k_; }
  const std::vector<float>& values() const { return v_; }
  const std::vector<std::uint16_t>& keys16() const { return k16_; }
  const std::vector<std::uint16_t>& values16() const { return v16_; }
  const std::vector<std::int32_t>& positions() const { return pos_; }

 private:
  LayerCacheSpec spec_;
  std::int64_t row_;             // floats per slot: n_kv_heads * head_dim
  std::vector<float> k_, v_;             // type f32
  std::vector<std::uint16_t> k16_, v16_;  // type f16
  std::vector<std::int32_t> pos_;
  int used_slots_ = 0;           // full caches: highest written slot + 1
};

// A copy of the sliding rings at some end position. Full layers need no copy: their slot p
// holds position p and is never overwritten while the cache only grows past `end`.
struct KvSnapshot {
  std::int64_t end = -1;  // -1: empty snapshot
  std::vector<std::vector<float>> k, v;        // per layer (empty for full layers and f16 caches)
  std::vector<std::vector<std::uint16_t>> k16, v16;  // per layer, f16 caches' rings
  std::vector<std::vector<std::int32_t>> pos;  // per layer (empty for full layers)
};

class KvCache {
 public:
  KvCache() = default;
  explicit KvCache(const std::vector<LayerCacheSpec>& specs);
  int size() const { return static_cast<int>(layers_.size()); }
  LayerCache& layer(int i) { return layers_[i]; }
  const LayerCache& layer(int i) const { return layers_[i]; }
  void check_writable(std::span<const std::int64_t> positions) const;
  void reset();
  void truncate(std::int64_t n);
  // LayerCache::copy_prefix_from for every layer, all or nothing.
  void copy_prefix_from(const KvCache& src, std::int64_t n);
  std::size_t bytes() const;
  // Every layer's LayerCache::export_rows / import_rows, layer after layer.
  std::size_t position_bytes() const;
  void export_rows(std::int64_t from, std::int64_t n, std::uint8_t* out) const;
  void import_rows(std::int64_t from, std::int64_t n, const std::uint8_t* in);
  // Copies the rings into `out` (reusing its buffers) as the state after `end` positions.
  void snapshot(std::int64_t end, KvSnapshot& out) const;
  // Returns to a snapshot's state. Valid only if no position below snapshot.end was
  // rewritten since it was taken (the caller's contract: it only appended, or truncated to
  // >= end).
  void restore(const KvSnapshot& snapshot);

 private:
  std::vector<LayerCache> layers_;
};

}  // namespace ringlm::kv
