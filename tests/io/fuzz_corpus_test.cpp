// Replays the fuzzer's seed corpus (fuzz/corpus/gguf) through the fuzz target's body in the
// ordinary test build, so every CI run (including the ASan one) covers those inputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "../../fuzz/gguf_fuzz.cpp"

TEST(GgufFuzzCorpus, SeedsRunCleanly) {
  const auto dir = std::filesystem::path(RINGLM_SOURCE_DIR) / "fuzz" / "corpus" / "gguf";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    // An exactly-sized heap copy: ASan flags any read past its end.
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto* exact = new std::uint8_t[bytes.size() ? bytes.size() : 1];
    std::copy(bytes.begin(), bytes.end(), exact);
    EXPECT_EQ(LLVMFuzzerTestOneInput(exact, bytes.size()), 0) << entry.path();
    delete[] exact;
    ++files;
  }
  EXPECT_GE(files, 40);
}
