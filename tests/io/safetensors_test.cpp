#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace ringlm::io;

namespace {

fs::path write_file(const std::string& name, const std::string& header, const std::string& body) {
  fs::path dir = fs::temp_directory_path() / ("ringlm_st_" + std::to_string(::getpid()) + "_" + name);
  fs::create_directories(dir);
  std::ofstream out(dir / "model.safetensors", std::ios::binary);
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
  out << header << body;
  return dir;
}

std::string error_of(const fs::path& dir) {
  try {
    SafetensorsSource s(dir);
  } catch (const ringlm::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Safetensors, CanonicalNames) {
  EXPECT_EQ(canonical_tensor_name("model.language_model.layers.0.mlp.up_proj.weight"), "layers.0.mlp.up_proj.weight");
  EXPECT_EQ(canonical_tensor_name("model.norm.weight"), "norm.weight");
  EXPECT_EQ(canonical_tensor_name("model.vision_tower.encoder.x"), "");
  EXPECT_EQ(canonical_tensor_name("model.audio_tower.y"), "");
  EXPECT_EQ(canonical_tensor_name("lm_head.weight"), "lm_head.weight");
}

TEST(Safetensors, ReadsViewsAndSkipsTowers) {
  const std::string body(4 * 2 + 8, '\x01');
  nlohmann::json h = {
      {"__metadata__", {{"format", "pt"}}},
      {"model.language_model.a", {{"dtype", "BF16"}, {"shape", {2, 2}}, {"data_offsets", {0, 8}}}},
      // An unsupported dtype in a tower we never read is bounds-checked but tolerated.
      {"model.vision_tower.b", {{"dtype", "I64"}, {"shape", {1}}, {"data_offsets", {8, 16}}}}};
  auto dir = write_file("ok", h.dump(), body);
  SafetensorsSource s(dir);
  const TensorView* a = s.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::BF16);
  EXPECT_EQ(a->shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(a->nbytes, 8u);
  EXPECT_EQ(s.names(), std::vector<std::string>{"a"});
  EXPECT_EQ(s.find("b"), nullptr);
}

TEST(Safetensors, RejectsHostileHeaders) {
  auto entry = [](const char* dtype, std::vector<int> shape, std::uint64_t b, std::uint64_t e) {
    return nlohmann::json{{"dtype", dtype}, {"shape", shape}, {"data_offsets", {b, e}}};
  };
  const std::string body(32, '\0');
  EXPECT_NE(error_of(write_file("size", nlohmann::json{{"model.t", entry("F32", {3}, 0, 8)}}.dump(), body)).find("model.t"),
            std::string::npos);
  EXPECT_NE(error_of(write_file("rev", nlohmann::json{{"model.t", entry("F32", {0}, 8, 4)}}.dump(), body)).find("reversed"),
            std::string::npos);
  EXPECT_NE(error_of(write_file("neg", nlohmann::json{{"model.t", {{"dtype", "F32"}, {"shape", {-1}}, {"data_offsets", {0, 4}}}}}.dump(), body))
                .find("negative"),
            std::string::npos);
  EXPECT_NE(error_of(write_file("huge", nlohmann::json{{"model.t", entry("F32", {2}, 0, ~0ull)}}.dump(), body)).find("past the end"),
            std::string::npos);
  EXPECT_NE(error_of(write_file("ovl", nlohmann::json{{"model.t", entry("F32", {4}, 0, 16)}, {"model.u", entry("F32", {4}, 8, 24)}}.dump(), body))
                .find("overlap"),
            std::string::npos);
  EXPECT_NE(error_of(write_file("dup", nlohmann::json{{"model.t", entry("F32", {1}, 0, 4)}, {"model.language_model.t", entry("F32", {1}, 4, 8)}}.dump(), body))
                .find("also stored"),
            std::string::npos);
  EXPECT_NE(error_of(write_file("notobj", "[]", body)).find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(fs::temp_directory_path() / "ringlm_st_nonexistent_dir").find("no model.safetensors"), std::string::npos);
}
