#include <gtest/gtest.h>

#include "kv/kv_cache.h"
#include "util/error.h"

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
