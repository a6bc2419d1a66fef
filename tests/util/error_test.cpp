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

TEST(Error, PlainFailIsAnInvalidArgumentWithNoParam) {
  try {
    ringlm::fail("bad value");
  } catch (const ringlm::Error& e) {
    EXPECT_EQ(e.kind(), ringlm::ErrorKind::invalid_argument);
    EXPECT_TRUE(e.param().empty());
  }
}

TEST(Error, KindedShorthandsCarryTheirKind) {
  using ringlm::ErrorKind;
  auto kind_of = [](auto thrower) {
    try {
      thrower();
    } catch (const ringlm::Error& e) {
      return e.kind();
    }
    return ErrorKind::invalid_argument;
  };
  EXPECT_EQ(kind_of([] { ringlm::fail_model_file("m.gguf: truncated"); }), ErrorKind::invalid_model_file);
  EXPECT_EQ(kind_of([] { ringlm::fail_unsupported("GGUF v1"); }), ErrorKind::unsupported);
  EXPECT_EQ(kind_of([] { ringlm::fail_limit("too deep"); }), ErrorKind::resource_limit);
  EXPECT_EQ(kind_of([] { ringlm::fail_io("x: cannot open"); }), ErrorKind::io);
  EXPECT_EQ(kind_of([] { ringlm::fail_internal("broken invariant"); }), ErrorKind::internal);
  EXPECT_STREQ(ringlm::error_kind_name(ErrorKind::invalid_model_file), "invalid_model_file");
}

TEST(Error, OnlyInternalErrorsExitWithTheBugStatus) {
  using ringlm::ErrorKind;
  for (auto k : {ErrorKind::invalid_argument, ErrorKind::invalid_model_file, ErrorKind::unsupported,
                 ErrorKind::resource_limit, ErrorKind::io})
    EXPECT_EQ(ringlm::exit_code(k), 1) << ringlm::error_kind_name(k);
  EXPECT_EQ(ringlm::exit_code(ErrorKind::internal), 2);
}

TEST(Error, RethrowWithParamKeepsKindMessageAndAnEarlierParam) {
  try {
    try {
      ringlm::fail_limit("schema nests deeper than 64");
    } catch (const ringlm::Error& e) {
      ringlm::rethrow_with_param(e, "response_format");
    }
  } catch (const ringlm::Error& e) {
    EXPECT_EQ(e.kind(), ringlm::ErrorKind::resource_limit);
    EXPECT_EQ(e.param(), "response_format");
    EXPECT_STREQ(e.what(), "schema nests deeper than 64");
  }
  try {
    try {
      throw ringlm::Error("x", ringlm::ErrorKind::invalid_argument, "tools");
    } catch (const ringlm::Error& e) {
      ringlm::rethrow_with_param(e, "response_format");
    }
  } catch (const ringlm::Error& e) {
    EXPECT_EQ(e.param(), "tools");
  }
}
