#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "io/mapped_file.h"
#include "util/error.h"

namespace fs = std::filesystem;

TEST(MappedFile, MapsContentsAndChecksRanges) {
  fs::path p = fs::temp_directory_path() / "ringlm_mapped_file_test.bin";
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
