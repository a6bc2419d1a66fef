// Replays the admission fuzz target's seed corpus (fuzz/corpus/admission) through its body in
// the ordinary test build, so every CI run checks that what the request parser accepts the
// sampler takes and that media header probes agree with decoding (fuzz/admission_fuzz.cpp).
#include <gtest/gtest.h>

#include "../../fuzz/admission_fuzz.cpp"
#include "../fuzz_corpus_replay.h"

TEST(AdmissionFuzzCorpus, SeedsRunCleanly) {
  EXPECT_GE(ringlm::testing::replay_fuzz_corpus("admission", LLVMFuzzerTestOneInput), 15);
}
