#include <gtest/gtest.h>

#include "kv/kv_cache.h"
#include "util/error.h"
#include "util/float16.h"

using namespace ringlm::kv;

TEST(KvCache, RingSlotsAndVisibility) {
  LayerCache ring({.n_kv_heads = 1, .head_dim = 2, .n_slots = 8, .window = 4});
  for (std::int64_t p = 0; p < 20; ++p) {
    std::int64_t one[1] = {p};
    ring.check_writable(one);
    ring.set_position(ring.slot_of(p), p);
  }
  EXPECT_EQ(ring.slot_of(19), 3);
  EXPECT_EQ(ring.end_position(), 20);
  // Query 20 sees 17..20, so a step may write 20..24 (evicting 12..16) but not 25, which
  // would evict 17.
  std::int64_t five[5] = {20, 21, 22, 23, 24};
  EXPECT_NO_THROW(ring.check_writable(five));
  std::int64_t six[6] = {20, 21, 22, 23, 24, 25};
  EXPECT_THROW(ring.check_writable(six), ringlm::Error);
  std::int64_t backwards[2] = {21, 20};
  EXPECT_THROW(ring.check_writable(backwards), ringlm::Error);
}

TEST(KvCache, FullCapacityAndTruncate) {
  LayerCache full({.n_kv_heads = 2, .head_dim = 4, .n_slots = 10, .window = 0});
  for (std::int64_t p = 0; p < 10; ++p) full.set_position(full.slot_of(p), p);
  std::int64_t past[1] = {10};
  EXPECT_THROW(full.check_writable(past), ringlm::Error);
  EXPECT_EQ(full.view().n_slots, 10);
  full.truncate(6);
  EXPECT_EQ(full.view().n_slots, 6);
  EXPECT_EQ(full.end_position(), 6);
  full.reset();
  EXPECT_EQ(full.end_position(), 0);
  EXPECT_EQ(full.view().n_slots, 0);
}

TEST(KvCache, RingTruncateNeedsTheWindow) {
  LayerCache ring({.n_kv_heads = 1, .head_dim = 2, .n_slots = 8, .window = 4});
  for (std::int64_t p = 0; p < 20; ++p) ring.set_position(ring.slot_of(p), p);
  // Ring holds 12..19. Rolling back to 17 needs 14..16: present.
  KvCache cache({{.n_kv_heads = 1, .head_dim = 2, .n_slots = 8, .window = 4}});
  for (std::int64_t p = 0; p < 20; ++p) cache.layer(0).set_position(cache.layer(0).slot_of(p), p);
  EXPECT_NO_THROW(cache.truncate(17));
  EXPECT_EQ(cache.layer(0).end_position(), 17);
  // Rolling back to 14 needs 11..13, but 11 was overwritten by 19: refused, nothing changes.
  for (std::int64_t p = 17; p < 20; ++p) cache.layer(0).set_position(cache.layer(0).slot_of(p), p);
  EXPECT_THROW(cache.truncate(14), ringlm::Error);
  EXPECT_EQ(cache.layer(0).end_position(), 20);
  EXPECT_NO_THROW(cache.truncate(15));  // needs 12..14, all present
}

// An f16 cache: write() rounds the rows (the attention kernels' kv_store_f16), view() hands
// the halves to attention, bytes() is half the f32 cache's, and snapshots carry the halves.
TEST(KvCache, F16RowsViewBytesAndSnapshots) {
  const LayerCacheSpec f32_spec{.n_kv_heads = 2, .head_dim = 4, .n_slots = 8, .window = 4};
  LayerCacheSpec f16_spec = f32_spec;
  f16_spec.type = KvType::f16;
  KvCache c32({f32_spec}), c16({f16_spec});
  EXPECT_EQ(c16.bytes() * 2, c32.bytes());
  EXPECT_EQ(c16.bytes(), 2u * 2 * 8 * 2 * 4);
  EXPECT_EQ(c16.layer(0).key(0), nullptr);  // no float storage to write in place
  float k[8], v[8];
  for (int i = 0; i < 8; ++i) {
    k[i] = 0.1f * static_cast<float>(i) + 1.0f / 3;
    v[i] = i == 0 ? 0.5f : -100000.0f * static_cast<float>(i);  // past the f16 range from i = 1: saturates
  }
  c16.layer(0).write(3, k, v);
  c16.layer(0).set_position(3, 3);
  const ringlm::kernels::KvSlots view = c16.layer(0).view();
  ASSERT_EQ(view.type, KvType::f16);
  ASSERT_NE(view.k16, nullptr);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(view.k16[3 * 8 + i], ringlm::f32_to_fp16(k[i]));
    EXPECT_EQ(view.v16[3 * 8 + i], i == 0 ? 0x3800 : 0xfbff) << i;  // 0.5, then -65504
  }
  KvSnapshot snap;
  c16.snapshot(4, snap);
  float other[8] = {};
  c16.layer(0).write(3, other, other);
  c16.restore(snap);
  EXPECT_EQ(c16.layer(0).view().k16[3 * 8 + 1], ringlm::f32_to_fp16(k[1]));
  // A snapshot of an f32 cache does not restore into an f16 one.
  KvSnapshot snap32;
  c32.snapshot(4, snap32);
  EXPECT_THROW(c16.restore(snap32), ringlm::Error);
  EXPECT_EQ(parse_kv_type("f16"), KvType::f16);
  EXPECT_EQ(parse_kv_type("f32"), KvType::f32);
  EXPECT_THROW(parse_kv_type("bf16"), ringlm::Error);
}
