// Replays the fuzzer's seed corpus (fuzz/corpus/gguf) through the fuzz target's body in the
// ordinary test build, so every CI run (including the ASan one) covers those inputs.
#include <gtest/gtest.h>

#include "../../fuzz/gguf_fuzz.cpp"
#include "../fuzz_corpus_replay.h"

TEST(GgufFuzzCorpus, SeedsRunCleanly) { EXPECT_GE(ringlm::testing::replay_fuzz_corpus("gguf", LLVMFuzzerTestOneInput), 40); }
