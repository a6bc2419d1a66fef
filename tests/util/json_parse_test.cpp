// util/json_parse.h: the same documents as nlohmann's parser, in time linear in the text.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "util/error.h"
#include "util/json_parse.h"
#include "../cpu_time.h"
#include "../sanitizer_build.h"

namespace {

using ringlm::parse_json;
using J = nlohmann::ordered_json;

// `n` distinct keys of a few letters each, as one object: {"aaaa":0,"aaab":0,...}.
std::string many_keys(std::size_t n) {
  std::string s = "{";
  for (std::size_t i = 0; i < n; ++i) {
    if (i) s += ',';
    s += '"';
    for (std::size_t v = i, k = 0; k < 4; ++k, v /= 26) s += static_cast<char>('a' + v % 26);
    s += "\":0";
  }
  return s + "}";
}

// CPU seconds of this thread, not wall time: a loaded host (ctest -j2) must not fail the bound.
double seconds_to_parse(const std::string& text) {
  J j;
  return ringlm::testing::thread_cpu_seconds_of([&] { j = parse_json(text, {.max_depth = 64}); });
}

TEST(JsonParse, SameDocumentAsNlohmann) {
  for (const char* text : {R"({"b":1,"a":[1,2.5,-3,"x",null,true,false,{}],"c":{"d":"\u00e9"}})", "[]", "\"s\"", "0",
                           R"({"big":18446744073709551615,"neg":-9223372036854775808,"f":1e308})"}) {
    EXPECT_EQ(parse_json(text).dump(), J::parse(text).dump()) << text;
  }
  // Key order is the document's; a duplicate keeps the first position and the last value
  // (what ordered_json::parse does), also past the size where a hash index takes over.
  EXPECT_EQ(parse_json(R"({"z":1,"a":2,"z":3})").dump(), R"({"z":3,"a":2})");
  std::string big = many_keys(40);
  big.back() = ',';
  big += R"("baaa":7,"aaaa":9})";
  EXPECT_EQ(parse_json(big).dump(), J::parse(big).dump());
  EXPECT_EQ(parse_json(big).size(), 40u);
}

TEST(JsonParse, ErrorsNameTheOffsetAndDepthIsLimitedWhileParsing) {
  try {
    parse_json(R"({"a": tru})");
    FAIL();
  } catch (const ringlm::Error& e) {
    EXPECT_EQ(e.kind(), ringlm::ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("invalid JSON at byte"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_json(""), ringlm::Error);
  EXPECT_THROW(parse_json("{} x"), ringlm::Error);
  EXPECT_THROW(parse_json("\"\\ud800\""), ringlm::Error);
  EXPECT_NO_THROW(parse_json(std::string(64, '[') + std::string(64, ']'), {.max_depth = 64}));
  try {
    parse_json(std::string(65, '[') + std::string(65, ']'), {.max_depth = 64});
    FAIL();
  } catch (const ringlm::Error& e) {
    EXPECT_EQ(e.kind(), ringlm::ErrorKind::resource_limit);
  }
  // Refused at the first bracket past the limit: a million of them cost nothing.
  EXPECT_THROW(parse_json(std::string(1 << 20, '[')), ringlm::Error);
}

// Issue #28: a 1.04 MB body of 131k distinct short keys took 80 s with ordered_json::parse.
TEST(JsonParse, OneMegabyteOfKeysParsesInLinearTime) {
  const std::string keys = many_keys(131072);
  ASSERT_GT(keys.size(), 1000000u);
  const double t_keys = seconds_to_parse(keys);
  // Deep nesting up to the limit, repeated to fill a megabyte.
  std::string deep = "[";
  while (deep.size() < (1u << 20)) deep += std::string(63, '[') + std::string(63, ']') + ",";
  deep.back() = ']';
  const double t_deep = seconds_to_parse(deep);
  std::printf("parse_json: 131072 keys (%zu bytes) %.3f s; nested (%zu bytes) %.3f s (CPU)\n", keys.size(), t_keys,
              deep.size(), t_deep);
  EXPECT_LT(t_keys, ringlm::testing::kParseBoundSeconds);
  EXPECT_LT(t_deep, ringlm::testing::kParseBoundSeconds);
  EXPECT_EQ(parse_json(keys).size(), 131072u);
}

}  // namespace
