// io::read_beneath: what it reads and what it refuses, through openat2 and through the
// O_NOFOLLOW walk that stands in for it where the kernel lacks openat2, and the race that a
// check-then-open-by-name reader loses: a folder inside swapped for a symlink to the outside.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "io/beneath.h"

namespace ringlm::io {
namespace {

namespace fs = std::filesystem;

class Beneath : public ::testing::TestWithParam<BeneathMethod> {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("ringlm_beneath_" + std::to_string(::getpid()));
    fs::remove_all(base_);
    root_ = base_ / "root";
    fs::create_directories(root_ / "d" / "e");
    fs::create_directories(base_ / "out" / "d");
    write(root_ / "d" / "f", "INSIDE");
    write(root_ / "top.txt", "TOP");
    write(base_ / "out" / "d" / "f", "OUTSIDE");
    write(base_ / "secret", "SECRET");
    fs::create_symlink(base_ / "secret", root_ / "link_out");
    fs::create_symlink("top.txt", root_ / "link_in");  // points inside, refused all the same
    fs::create_symlink(base_ / "out" / "d", root_ / "s");
    ::mkfifo((root_ / "fifo").c_str(), 0600);
  }
  void TearDown() override { fs::remove_all(base_); }
  static void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }
  BeneathRead read(const std::string& asked, std::size_t max = 1 << 20) {
    bool outside = false;
    fs::path rel = relative_beneath(root_, asked, {}, &outside);
    if (outside) return {BeneathStatus::outside, {}, 0, {}};
    return read_beneath(root_, rel, max, GetParam());
  }
  fs::path base_, root_;
};

TEST_P(Beneath, ReadsFilesUnderTheFolder) {
  EXPECT_EQ(read("d/f").bytes, "INSIDE");
  EXPECT_EQ(read("d/e/../f").bytes, "INSIDE");
  EXPECT_EQ(read("./top.txt").bytes, "TOP");
  EXPECT_EQ(read((root_ / "d" / "f").string()).bytes, "INSIDE");  // absolute, under the folder
}

TEST_P(Beneath, RefusesWhatLeavesTheFolder) {
  EXPECT_EQ(read("../secret").status, BeneathStatus::outside);
  EXPECT_EQ(read("../nowhere").status, BeneathStatus::outside);  // missing too: the same answer
  EXPECT_EQ(read((base_ / "secret").string()).status, BeneathStatus::outside);
  EXPECT_EQ(read("link_out").status, BeneathStatus::outside);
  EXPECT_EQ(read("link_in").status, BeneathStatus::outside);
  EXPECT_EQ(read("s/f").status, BeneathStatus::outside);  // a symlinked folder on the way
  // Handed a relative path with ".." directly (not folded by relative_beneath): still refused.
  EXPECT_EQ(read_beneath(root_, "d/../../secret", 100, GetParam()).status, BeneathStatus::outside);
  EXPECT_EQ(read_beneath(root_, "/etc/hostname", 100, GetParam()).status, BeneathStatus::outside);
}

TEST_P(Beneath, SaysWhatElseIsWrong) {
  EXPECT_EQ(read("d/missing").status, BeneathStatus::missing);
  EXPECT_EQ(read("top.txt/x").status, BeneathStatus::missing);
  EXPECT_EQ(read("d").status, BeneathStatus::not_regular);
  EXPECT_EQ(read(".").status, BeneathStatus::not_regular);
  EXPECT_EQ(read("fifo").status, BeneathStatus::not_regular);  // and the open did not hang
  BeneathRead big = read("d/f", 5);
  EXPECT_EQ(big.status, BeneathStatus::too_large);
  EXPECT_EQ(big.size, 6u);
  EXPECT_EQ(read("d/f", 6).bytes, "INSIDE");
  EXPECT_EQ(read_beneath(base_ / "no-folder", "d/f", 100, GetParam()).status, BeneathStatus::no_root);
}

// Loads of "d/f" while another thread keeps exchanging the folder d with the symlink s to
// ../out/d (renameat2 RENAME_EXCHANGE): each load gets the inside file or a refusal, never the
// outside one. Returns {inside reads, refusals}.
std::pair<int, int> race(const fs::path& root, BeneathMethod method, int loads) {
  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread swapper([&] {
    while (!stop.load()) {
      if (::renameat2(AT_FDCWD, (root / "d").c_str(), AT_FDCWD, (root / "s").c_str(), RENAME_EXCHANGE) == 0) ++swaps;
    }
  });
  int inside = 0, refused = 0, leaked = 0;
  for (int i = 0; i < loads; ++i) {
    BeneathRead r = read_beneath(root, "d/f", 100, method);
    if (r.status != BeneathStatus::ok) ++refused;
    else if (r.bytes == "INSIDE") ++inside;
    else ++leaked;
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(leaked, 0) << "loads that read the outside file, of " << loads;
  EXPECT_GT(swaps.load(), 100) << "the swapper hardly ran";
  return {inside, refused};
}

TEST_P(Beneath, SwappingAFolderForASymlinkNeverLeadsOutside) {
  const auto [inside, refused] = race(root_, GetParam(), 20000);
  std::printf("20000 loads while swapping: %d read inside, %d refused, 0 outside\n", inside, refused);
  EXPECT_GT(inside, 0);
  EXPECT_GT(refused, 0);
}

INSTANTIATE_TEST_SUITE_P(Methods, Beneath, ::testing::Values(BeneathMethod::automatic, BeneathMethod::walk_only),
                         [](const auto& info) { return info.param == BeneathMethod::automatic ? "openat2" : "walk"; });

TEST(RelativeBeneath, FoldsAgainstTheRightFolder) {
  bool outside = false;
  EXPECT_EQ(relative_beneath("/data", "img/a.png", "/data/in", &outside), "in/img/a.png");
  EXPECT_FALSE(outside);
  EXPECT_EQ(relative_beneath("/data", "../img/a.png", "/data/in", &outside), "img/a.png");
  EXPECT_FALSE(outside);
  EXPECT_EQ(relative_beneath("/data/in", "../img/a.png", "/data/in", &outside), "");
  EXPECT_TRUE(outside);
  EXPECT_EQ(relative_beneath("/data", "/datax/a.png", {}, &outside), "");  // a prefix of the name is not the folder
  EXPECT_TRUE(outside);
  EXPECT_EQ(relative_beneath("/data/", "/data/./x/../a.png", {}, &outside), "a.png");
  EXPECT_FALSE(outside);
}

}  // namespace
}  // namespace ringlm::io
