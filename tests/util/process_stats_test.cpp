#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "util/process_stats.h"

TEST(ProcessStats, RssGrowsWhenMemoryIsTouched) {
  const std::int64_t before = ringlm::current_rss_bytes();
  ASSERT_GT(before, 0);
  const std::size_t n = 64u << 20;
  std::unique_ptr<char[]> block(new char[n]);
  std::memset(block.get(), 1, n);
  const std::int64_t after = ringlm::current_rss_bytes();
  EXPECT_GT(after - before, static_cast<std::int64_t>(n / 2)) << block[n - 1];
  EXPECT_GE(ringlm::peak_rss_bytes(), after);
}
