// Replays the admission fuzz target's seed corpus (fuzz/corpus/admission) through its body in
// the ordinary test build, so every CI run checks that what the request parser accepts the
// sampler takes and that media header probes agree with decoding (fuzz/admission_fuzz.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "../../fuzz/admission_fuzz.cpp"

TEST(AdmissionFuzzCorpus, SeedsRunCleanly) {
  const auto dir = std::filesystem::path(RINGLM_SOURCE_DIR) / "fuzz" / "corpus" / "admission";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto* exact = new std::uint8_t[bytes.size() ? bytes.size() : 1];
    std::copy(bytes.begin(), bytes.end(), exact);
    EXPECT_EQ(LLVMFuzzerTestOneInput(exact, bytes.size()), 0) << entry.path();
    delete[] exact;
    ++files;
  }
  EXPECT_GE(files, 15);
}
