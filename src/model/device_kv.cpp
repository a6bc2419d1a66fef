#include "model/device_kv.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "util/error.h"

namespace ringlm::model::detail {

namespace {
std::uint64_t slot_bytes(const backend::KvLayer& kv) {
  return 2ull * static_cast<std::uint64_t>(kv.n_kv_heads) * static_cast<std::uint64_t>(kv.head_dim);
}
}  // namespace

DeviceKv::DeviceKv(backend::Device& dev, const kv::KvCache& cache) : dev_(dev) {
  try {
    for (int i = 0; i < cache.size(); ++i) {
      const kv::LayerCacheSpec& s = cache.layer(i).spec();
      backend::KvLayer kv;
      kv.n_slots = s.n_slots;
      kv.n_kv_heads = s.n_kv_heads;
      kv.head_dim = s.head_dim;
      const std::string name = "KV cache " + std::to_string(i);
      layers_.push_back(kv);  // before the buffers: a failure below frees what was made
      backend::KvLayer& l = layers_.back();
      l.k = dev_.create_buffer(slot_bytes(kv) * s.n_slots, backend::Memory::device, name + " keys");
      l.v = dev_.create_buffer(slot_bytes(kv) * s.n_slots, backend::Memory::device, name + " values");
      l.pos = dev_.create_buffer(4ull * s.n_slots, backend::Memory::device, name + " positions");
      dev_.fill_words(l.pos, 0xFFFFFFFFu);  // -1: empty
      // Zeroed now, so the cache's memory is committed when the session is made, not a page
      // at a time as decode reaches new slots (on a device whose memory is the process's,
      // such as lavapipe, that showed as ~500 B/token of RSS growth).
      dev_.fill_words(l.k, 0);
      dev_.fill_words(l.v, 0);
    }
  } catch (...) {
    for (const backend::KvLayer& l : layers_)
      for (backend::BufferId b : {l.k, l.v, l.pos}) dev_.destroy_buffer(b);
    throw;
  }
}

DeviceKv::~DeviceKv() {
  try {
    for (const backend::KvLayer& l : layers_)
      for (backend::BufferId b : {l.k, l.v, l.pos}) dev_.destroy_buffer(b);
  } catch (const Error&) {
    // A lost device frees nothing; the buffers go with it.
  }
}

void DeviceKv::sync_positions(const kv::KvCache& cache) {
  for (int i = 0; i < cache.size(); ++i) {
    const std::vector<std::int32_t>& pos = cache.layer(i).positions();
    dev_.write(layers_[static_cast<std::size_t>(i)].pos, 0, pos.data(), 4 * pos.size());
  }
}

void DeviceKv::snapshot(const kv::KvCache& cache, kv::KvSnapshot& out) const {
  for (int i = 0; i < cache.size(); ++i) {
    if (!cache.layer(i).is_ring()) continue;
    const backend::KvLayer& l = layers_[static_cast<std::size_t>(i)];
    const std::uint64_t bytes = slot_bytes(l) * static_cast<std::uint64_t>(l.n_slots);
    out.k16[i].resize(bytes / 2);
    out.v16[i].resize(bytes / 2);
    dev_.read(l.k, 0, out.k16[i].data(), bytes);
    dev_.read(l.v, 0, out.v16[i].data(), bytes);
  }
}

void DeviceKv::restore(const kv::KvCache& cache, const kv::KvSnapshot& snap) {
  for (int i = 0; i < cache.size(); ++i) {
    if (!cache.layer(i).is_ring()) continue;
    const backend::KvLayer& l = layers_[static_cast<std::size_t>(i)];
    const std::uint64_t bytes = slot_bytes(l) * static_cast<std::uint64_t>(l.n_slots);
    if (snap.k16.size() != layers_.size() || snap.k16[i].size() * 2 != bytes || snap.v16[i].size() * 2 != bytes)
      fail("KV cache: the snapshot was not taken on a device session of this geometry (layer ", i, ")");
    dev_.write(l.k, 0, snap.k16[i].data(), bytes);
    dev_.write(l.v, 0, snap.v16[i].data(), bytes);
  }
}

void DeviceKv::copy_prefix_from(const DeviceKv& src, const kv::KvCache& src_cache, std::int64_t n) {
  std::vector<backend::BufferCopy> copies;
  copies.reserve(2 * layers_.size());
  for (int i = 0; i < src_cache.size(); ++i) {
    const backend::KvLayer& d = layers_[static_cast<std::size_t>(i)];
    const backend::KvLayer& s = src.layers_[static_cast<std::size_t>(i)];
    // A ring: every slot (its positions say which are valid); a full cache: slots [0, n).
    const std::uint64_t slots = src_cache.layer(i).is_ring() ? static_cast<std::uint64_t>(s.n_slots)
                                                             : static_cast<std::uint64_t>(n);
    const std::uint64_t bytes = slots * slot_bytes(s);
    copies.push_back({s.k, d.k, 0, 0, bytes});
    copies.push_back({s.v, d.v, 0, 0, bytes});
  }
  dev_.copy_buffers(copies.data(), copies.size());
}

int DeviceKv::slot_runs(const kv::LayerCache& l, std::int64_t from, std::int64_t n, SlotRun out[2]) const {
  if (n <= 0) return 0;
  if (l.is_ring() && n > l.spec().n_slots)
    fail("KV cache: ", n, " positions do not fit a sliding ring of ", l.spec().n_slots, " slots");
  const int first = l.slot_of(from);
  if (!l.is_ring() || first + n <= l.spec().n_slots) {
    out[0] = {first, static_cast<int>(n)};
    return 1;
  }
  const int head = l.spec().n_slots - first;
  out[0] = {first, head};
  out[1] = {0, static_cast<int>(n) - head};
  return 2;
}

void DeviceKv::export_rows(const kv::KvCache& cache, std::int64_t from, std::int64_t n, std::uint8_t* out) const {
  for (int i = 0; i < cache.size(); ++i) {
    const kv::LayerCache& lc = cache.layer(i);
    const backend::KvLayer& l = layers_[static_cast<std::size_t>(i)];
    const std::uint64_t sb = slot_bytes(l);
    rows_k_.resize(static_cast<std::size_t>(n * sb / 2));
    rows_v_.resize(static_cast<std::size_t>(n * sb / 2));
    SlotRun runs[2];
    std::uint64_t done = 0;
    for (int r = 0, nr = slot_runs(lc, from, n, runs); r < nr; ++r) {
      const std::uint64_t bytes = static_cast<std::uint64_t>(runs[r].count) * sb;
      dev_.read(l.k, static_cast<std::uint64_t>(runs[r].first) * sb, rows_k_.data() + done / 2, bytes);
      dev_.read(l.v, static_cast<std::uint64_t>(runs[r].first) * sb, rows_v_.data() + done / 2, bytes);
      done += bytes;
    }
    for (std::int64_t p = 0; p < n; ++p) {  // K row then V row per position
      std::memcpy(out, rows_k_.data() + p * sb / 2, sb);
      std::memcpy(out + sb, rows_v_.data() + p * sb / 2, sb);
      out += 2 * sb;
    }
  }
}

void DeviceKv::read_slots(const kv::KvCache& cache, int i, std::int64_t from, std::int64_t n, std::uint16_t* k16,
                          std::uint16_t* v16) const {
  const backend::KvLayer& l = layers_[static_cast<std::size_t>(i)];
  const std::uint64_t sb = slot_bytes(l);
  SlotRun runs[2];
  for (int r = 0, nr = slot_runs(cache.layer(i), from, n, runs); r < nr; ++r) {
    const std::uint64_t at = static_cast<std::uint64_t>(runs[r].first) * sb, bytes = runs[r].count * sb;
    dev_.read(l.k, at, k16 + at / 2, bytes);
    dev_.read(l.v, at, v16 + at / 2, bytes);
  }
}

void DeviceKv::import_rows(const kv::KvCache& cache, std::int64_t from, std::int64_t n, const std::uint8_t* in) {
  for (int i = 0; i < cache.size(); ++i) {
    const kv::LayerCache& lc = cache.layer(i);
    const backend::KvLayer& l = layers_[static_cast<std::size_t>(i)];
    const std::uint64_t sb = slot_bytes(l);
    rows_k_.resize(static_cast<std::size_t>(n * sb / 2));
    rows_v_.resize(static_cast<std::size_t>(n * sb / 2));
    for (std::int64_t p = 0; p < n; ++p) {
      std::memcpy(rows_k_.data() + p * sb / 2, in, sb);
      std::memcpy(rows_v_.data() + p * sb / 2, in + sb, sb);
      in += 2 * sb;
    }
    SlotRun runs[2];
    std::uint64_t done = 0;
    for (int r = 0, nr = slot_runs(lc, from, n, runs); r < nr; ++r) {
      const std::uint64_t bytes = static_cast<std::uint64_t>(runs[r].count) * sb;
      dev_.write(l.k, static_cast<std::uint64_t>(runs[r].first) * sb, rows_k_.data() + done / 2, bytes);
      dev_.write(l.v, static_cast<std::uint64_t>(runs[r].first) * sb, rows_v_.data() + done / 2, bytes);
      done += bytes;
    }
  }
}

}  // namespace ringlm::model::detail
