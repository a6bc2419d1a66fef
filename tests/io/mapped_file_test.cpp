#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "io/mapped_file.h"
#include "util/error.h"

namespace fs = std::filesystem;

TEST(MappedFile, MapsContentsAndChecksRanges) {
  // The pid keeps two runs at once (two build trees, or ctest runs side by side) apart.
  fs::path p = fs::temp_directory_path() / ("ringlm_mapped_file_test_" + std::to_string(::getpid()) + ".bin");
  { std::ofstream(p, std::ios::binary) << "0123456789"; }
  ringlm::io::MappedFile f(p);
  ASSERT_EQ(f.size(), 10u);
  EXPECT_EQ(f.range(2, 3)[0], '2');
  EXPECT_EQ(f.range(10, 0).size(), 0u);
  EXPECT_THROW(f.range(8, 3), ringlm::Error);
  EXPECT_THROW(f.range(~0ull, 2), ringlm::Error);  // offset + length overflows
  fs::remove(p);
}

TEST(MappedFile, MissingFileNamesThePath) {
  try {
    ringlm::io::MappedFile f("/nonexistent/ringlm.bin");
    FAIL();
  } catch (const ringlm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/ringlm.bin"), std::string::npos);
  }
}

namespace {
// Resident kB of the mapping that contains `p`, from /proc/self/smaps.
long resident_kb(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    // A mapping's header line starts "lo-hi perms ..."; its fields follow on their own lines.
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = addr >= lo && addr < hi;
      continue;
    }
    long kb = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1) return kb;
  }
  return -1;
}
}  // namespace

// drop_pages gives touched pages back (the mapping's resident set shrinks) without losing a
// byte, and refuses (returns false, does nothing) for memory that is not inside the mapping.
TEST(MappedFile, DropPagesShrinksTheResidentSetAndKeepsTheData) {
  fs::path p = fs::temp_directory_path() / ("ringlm_drop_pages_" + std::to_string(::getpid()) + ".bin");
  const std::size_t n = 8u << 20;
  {
    std::ofstream out(p, std::ios::binary);
    for (std::size_t i = 0; i < n; ++i) out.put(static_cast<char>(i * 7 + (i >> 12)));
  }
  ringlm::io::MappedFile f(p);
  unsigned sum = 0;
  for (std::size_t i = 0; i < n; i += 4096) sum += f.data()[i];  // touch every page
  const long before = resident_kb(f.data());
  ASSERT_GE(before, 7 * 1024) << "the touched mapping should be resident";
  EXPECT_TRUE(f.drop_pages(f.data() + 100, n - 200));  // rounds out to the covering pages
  const long after = resident_kb(f.data());
  EXPECT_LT(after, 1024) << "resident before " << before << " kB";
  unsigned again = 0;
  for (std::size_t i = 0; i < n; i += 4096) again += f.data()[i];
  EXPECT_EQ(again, sum);
  for (std::size_t i = 0; i < n; i += 999983) ASSERT_EQ(f.data()[i], static_cast<std::uint8_t>(i * 7 + (i >> 12)));
  // Outside the mapping: refused.
  std::vector<std::uint8_t> heap(4096, 1);
  EXPECT_FALSE(f.drop_pages(heap.data(), heap.size()));
  EXPECT_EQ(heap[0], 1);
  EXPECT_FALSE(f.drop_pages(f.data() + n - 10, 11));  // runs past the end
  EXPECT_FALSE(f.drop_pages(f.data(), 0));
  fs::remove(p);
}
