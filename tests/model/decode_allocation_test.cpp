// Decode must not allocate: this binary's global operator new counts allocations while a
// flag is set, and a warmed-up session decodes with the flag on.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <new>

#include "kernels/thread_pool.h"
#include "model/batch_forward.h"
#include "model/model.h"
#include "model/testing/test_checkpoint.h"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
// The nothrow forms too (std::stable_sort's temporary buffer uses them): every allocation of
// this binary must come from malloc, since the deletes below free() whatever they get.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

TEST(Decode, AllocatesNothingAfterWarmUp) {
  namespace fs = std::filesystem;
  using namespace ringlm;
  const fs::path dir = fs::temp_directory_path() / ("ringlm_alloc_test_" + std::to_string(::getpid()));
  model::testing::TestCheckpointOptions o;
  o.preset = "tiny-gqa";
  model::testing::write_test_checkpoint(dir, o);
  auto m = model::Model::load(dir, {.threads = 2, .weights = model::WeightFormat::stored});
  fs::remove_all(dir);
  model::Session s(m);
  // Warm-up: per-thread buffers reach their final size (the full cache's slot count).
  std::vector<std::int32_t> ids(70);
  std::vector<std::int64_t> pos(70);
  for (int i = 0; i < 70; ++i) ids[i] = (i * 37) % m->config().vocab_size, pos[i] = i;
  s.prefill(ids, pos, model::LogitsMode::Last);
  s.decode(5, 70);
  counting = true;
  float checksum = 0;
  // Up to 300: the full layers' caches pass 256 slots, where decode attention starts
  // splitting the slots over the two threads (kernels/attention.cpp).
  for (int i = 71; i < 300; ++i) checksum += s.decode(i % m->config().vocab_size, i)[0];
  counting = false;
  EXPECT_EQ(allocations.load(), 0);
  EXPECT_TRUE(std::isfinite(checksum));
}

TEST(Decode, DeferredAndSubsetHeadAllocateNothingAfterWarmUp) {
  namespace fs = std::filesystem;
  using namespace ringlm;
  const fs::path dir = fs::temp_directory_path() / ("ringlm_alloc_head_test_" + std::to_string(::getpid()));
  model::testing::TestCheckpointOptions o;
  o.preset = "tiny";
  model::testing::write_test_checkpoint(dir, o);
  for (auto format : {model::WeightFormat::stored, model::WeightFormat::q4_0}) {
    auto m = model::Model::load(dir, {.threads = 2, .weights = format});
    model::Session s(m);
    const int V = m->config().vocab_size;
    std::vector<std::int32_t> rows;
    for (int i = 0; i < 200; ++i) rows.push_back((i * 131) % V);
    std::vector<float> compact(rows.size());
    s.reserve_head_rows(rows.size());
    // Warm-up: every call once, so per-thread buffers have their final size.
    s.decode_hidden(1, 0);
    s.head_logits_rows(rows);
    s.head_logits_compact(rows, compact);
    s.head_logits();
    allocations = 0;
    counting = true;
    float checksum = 0;
    for (int i = 1; i < 60; ++i) {
      s.decode_hidden(i % V, i);
      const std::span<const std::int32_t> some(rows.data(), static_cast<std::size_t>(i % 200 + 1));
      checksum += s.head_logits_rows(some)[rows[0]];
      s.head_logits_compact(some, std::span<float>(compact.data(), some.size()));
      checksum += compact[0] + s.head_logits()[1];
    }
    counting = false;
    EXPECT_EQ(allocations.load(), 0) << (format == model::WeightFormat::q4_0 ? "q4_0" : "stored");
    EXPECT_TRUE(std::isfinite(checksum));
  }
  fs::remove_all(dir);
}

TEST(Decode, BatchedStepsAllocateNothingAfterWarmUp) {
  namespace fs = std::filesystem;
  using namespace ringlm;
  const fs::path dir = fs::temp_directory_path() / ("ringlm_alloc_batch_test_" + std::to_string(::getpid()));
  model::testing::TestCheckpointOptions o;
  o.preset = "tiny";
  model::testing::write_test_checkpoint(dir, o);
  kernels::ThreadPool& pool = kernels::default_thread_pool();
  pool.hold_workers_for_testing(true);  // until the warm-up is over (below)
  auto m = model::Model::load(dir, {.threads = 2, .weights = model::WeightFormat::q4_0});
  fs::remove_all(dir);
  std::vector<std::unique_ptr<model::Session>> sessions;
  for (int i = 0; i < 3; ++i) sessions.push_back(std::make_unique<model::Session>(m));
  model::BatchForward batch(m, {.max_rows = 3 + model::Session::kMaxChunk, .max_items = 3});
  std::vector<std::int32_t> ids(3);
  std::vector<std::int64_t> pos(3);
  std::vector<model::BatchItem> items;
  items.reserve(3);
  auto step = [&](std::int64_t p) {
    items.clear();
    for (int i = 0; i < 3; ++i) {
      ids[i] = static_cast<std::int32_t>((p * 31 + i) % m->config().vocab_size);
      pos[i] = p;
      items.push_back({sessions[i].get(), std::span<const std::int32_t>(&ids[i], 1),
                       std::span<const std::int64_t>(&pos[i], 1), model::LogitsMode::Last});
    }
    batch.run(items);
    return batch.logits(0)[0] + batch.logits(2)[1];
  };
  // Warm-up past 256 positions (decode attention splits the full layers' slots from there),
  // with the pool's workers held, so the caller runs every share: shares are claimed by
  // whichever thread comes first, and a loaded machine can keep a worker out of every share of
  // the warm-up. Scratch that a share grows on its own thread (the multi-row q4 tile's packed
  // rows did) then allocated on the worker's first share during decode (1 in ~12 runs under
  // load before the rows were packed by the caller).
  for (std::int64_t p = 0; p < 270; ++p) step(p);
  pool.hold_workers_for_testing(false);
  allocations = 0;
  counting = true;
  float checksum = 0;
  for (std::int64_t p = 270; p < 400; ++p) checksum += step(p);
  counting = false;
  EXPECT_EQ(allocations.load(), 0);
  EXPECT_TRUE(std::isfinite(checksum));
}
