// Replays a libFuzzer target's seed corpus (fuzz/corpus/<name>) through its body in the
// ordinary test build, so every CI run (the ASan one included) covers those inputs. Shared by
// the test areas whose module a fuzz target exercises.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

namespace ringlm::testing {

// Calls one_input(data, size) on each file, expecting 0; returns how many files ran.
template <class OneInput>
int replay_fuzz_corpus(const char* name, OneInput one_input) {
  const auto dir = std::filesystem::path(RINGLM_SOURCE_DIR) / "fuzz" / "corpus" / name;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // An exactly-sized heap copy: ASan flags any read past its end.
    auto exact = std::make_unique<std::uint8_t[]>(std::max<std::size_t>(bytes.size(), 1));
    std::copy(bytes.begin(), bytes.end(), exact.get());
    EXPECT_EQ(one_input(exact.get(), bytes.size()), 0) << entry.path();
    ++files;
  }
  return files;
}

}  // namespace ringlm::testing
