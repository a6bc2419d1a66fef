#include <gtest/gtest.h>

#include "util/error.h"

TEST(Error, FailConcatenatesItsArguments) {
  try {
    ringlm::fail("file ", "x.safetensors", ": tensor ", 3, " missing");
    FAIL() << "fail() returned";
  } catch (const ringlm::Error& e) {
    EXPECT_STREQ(e.what(), "file x.safetensors: tensor 3 missing");
  }
}
