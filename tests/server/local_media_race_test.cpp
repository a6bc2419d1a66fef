// `serve --allow-local-media DIR` under a folder-for-symlink swap (issue #28): while one thread
// keeps exchanging a folder inside DIR with a symlink to a folder outside (renameat2
// RENAME_EXCHANGE), no load of a file in that folder may return the outside file's bytes. A
// reader that resolves the path (canonical()) and then opens it by name read the outside file
// in 62 of 552 requests; load_media now opens beneath DIR with the kernel (io/beneath.h).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "server/api_error.h"
#include "server/local_media.h"

namespace ringlm::server {
namespace {

namespace fs = std::filesystem;

TEST(LocalMediaRace, SwappedFolderNeverServesTheOutsideFile) {
  const fs::path base = fs::temp_directory_path() / ("ringlm_media_race_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "allowed" / "d");
  fs::create_directories(base / "outside" / "d");
  std::ofstream(base / "allowed" / "d" / "f.png", std::ios::binary) << "INSIDE";
  std::ofstream(base / "outside" / "d" / "f.png", std::ios::binary) << "OUTSIDE";
  fs::create_symlink(base / "outside" / "d", base / "allowed" / "s");
  MediaPolicy policy;
  policy.allow_dir = base / "allowed";
  MediaRef ref;
  ref.path = "d/f.png";
  ref.param = "messages[0].content[0].image_url.url";

  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread swapper([&] {
    const std::string a = (base / "allowed" / "d").string(), b = (base / "allowed" / "s").string();
    while (!stop.load())
      if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) ++swaps;
  });
  const int loads = 20000;
  int inside = 0, refused = 0, leaked = 0;
  for (int i = 0; i < loads; ++i) {
    try {
      const std::string bytes = load_media({ref}, policy).at(0).bytes;
      (bytes == "INSIDE" ? inside : leaked) += 1;
    } catch (const ApiError& e) {
      ++refused;
    }
  }
  stop = true;
  swapper.join();
  fs::remove_all(base);
  std::printf("%d loads while swapping (%ld swaps): %d inside, %d refused, %d outside\n", loads, swaps.load(), inside,
              refused, leaked);
  EXPECT_EQ(leaked, 0) << "loads that returned the file outside --allow-local-media";
  EXPECT_GT(swaps.load(), 100) << "the swapper hardly ran";
  EXPECT_GT(inside, 0);
}

}  // namespace
}  // namespace ringlm::server
