// One Session's KV caches on a compute device (docs/backends.md): K and V of every
// KV-owning layer as binary16, [slot][kv_head][head_dim] as on the CPU, and the position of
// each slot (int32, -1 empty). The session's kv::KvCache is built positions-only and stays
// the bookkeeping (check_writable, truncate, the prefix checks); this class moves the rows:
// the device copy of the positions after the host changed them, snapshots of the sliding
// rings, prefix copies between sessions (device to device) and the prefix cache's
// export/import of rows (kv::LayerCache::export_rows's byte layout, bits as stored).
// Internal to src/model.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/device.h"
#include "kv/kv_cache.h"

namespace ringlm::model::detail {

class DeviceKv {
 public:
  // Device buffers for every layer of `cache` (positions-only, f16); all slots empty.
  DeviceKv(backend::Device& dev, const kv::KvCache& cache);
  ~DeviceKv();  // frees the device buffers
  DeviceKv(const DeviceKv&) = delete;
  DeviceKv& operator=(const DeviceKv&) = delete;

  const backend::KvLayer& layer(int i) const { return layers_[static_cast<std::size_t>(i)]; }
  // Makes the device's slot positions those of `cache` (after reset, truncate, restore,
  // a prefix copy or an import).
  void sync_positions(const kv::KvCache& cache);
  // The rings' K/V into out.k16 / out.v16 (cache.snapshot() took the positions).
  void snapshot(const kv::KvCache& cache, kv::KvSnapshot& out) const;
  // The rings' K/V back from a snapshot this geometry took (positions: sync_positions).
  void restore(const kv::KvCache& cache, const kv::KvSnapshot& snap);
  // The K/V rows that hold src's positions [0, n) (src_cache says where), device to device.
  void copy_prefix_from(const DeviceKv& src, const kv::KvCache& src_cache, std::int64_t n);
  // Positions [from, from + n) as kv::KvCache::export_rows lays them out (the caller checked
  // they are held), and the inverse (the caller checked they are writable).
  void export_rows(const kv::KvCache& cache, std::int64_t from, std::int64_t n, std::uint8_t* out) const;
  void import_rows(const kv::KvCache& cache, std::int64_t from, std::int64_t n, const std::uint8_t* in);
  // The slots of cache i that hold positions [from, from + n) (n at most a ring's slots) into
  // k16 / v16 at their own slot offsets ([slot][kv_head][head_dim] halves, as on the device).
  void read_slots(const kv::KvCache& cache, int i, std::int64_t from, std::int64_t n, std::uint16_t* k16,
                  std::uint16_t* v16) const;

 private:
  // The slot ranges [first, first + count) that hold positions [from, from + n) of layer i
  // (a ring wraps at most once: n <= its slots).
  struct SlotRun {
    int first, count;
  };
  int slot_runs(const kv::LayerCache& l, std::int64_t from, std::int64_t n, SlotRun out[2]) const;

  backend::Device& dev_;
  std::vector<backend::KvLayer> layers_;
  mutable std::vector<std::uint16_t> rows_k_, rows_v_;  // export/import staging
};

}  // namespace ringlm::model::detail
