#include "cli/test_model_writer.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <system_error>

#include "audio/testing/test_audio_tower.h"
#include "model/testing/test_assistant.h"
#include "model/testing/test_checkpoint.h"
#include "util/error.h"
#include "vision/testing/test_vision_tower.h"

namespace ringlm::cli {

std::filesystem::path tokenizer_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share" / "ringlm" / "gemma4-tokenizer";
    if (std::filesystem::exists(installed / "tokenizer.json")) return installed;
  }
  return RINGLM_TOKENIZER_DIR;
}

namespace {
void write_assistant(const std::filesystem::path& out, const TestModelSpec& spec) {
  model::testing::TestAssistantOptions o;
  o.preset = spec.preset;
  o.seed = spec.seed;
  if (out.extension() == ".gguf") {  // one gemma4-assistant GGUF file (model/assistant_gguf.h)
    const std::map<std::string, io::DType> types = {{"f32", io::DType::F32}, {"f16", io::DType::F16},
                                                    {"bf16", io::DType::BF16}, {"q8_0", io::DType::Q8_0},
                                                    {"q4_0", io::DType::Q4_0}};
    const auto it = types.find(spec.dtype);
    if (it == types.end())
      fail("make-test-model --assistant OUT.gguf: --dtype must be f32, f16, bf16, q8_0 or q4_0, got '", spec.dtype, "'");
    const auto t0 = std::chrono::steady_clock::now();
    model::testing::write_test_assistant_gguf(out, o, it->second);
    std::fprintf(stderr, "make-test-model: wrote assistant %s (%s, %s, seed %llu) in %.1f s\n", out.c_str(),
                 o.preset.c_str(), spec.dtype.c_str(), static_cast<unsigned long long>(o.seed),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return;
  }
  if (spec.dtype == "bf16") o.dtype = io::DType::BF16;
  else if (spec.dtype == "f16") o.dtype = io::DType::F16;
  else if (spec.dtype == "f32") o.dtype = io::DType::F32;
  else fail("make-test-model: --dtype must be bf16, f16 or f32, got '", spec.dtype, "'");
  const auto t0 = std::chrono::steady_clock::now();
  model::testing::write_test_assistant(out, o);
  std::fprintf(stderr, "make-test-model: wrote assistant %s (%s, seed %llu) in %.1f s\n", out.c_str(), o.preset.c_str(),
               static_cast<unsigned long long>(o.seed),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}
}  // namespace

void write_test_model(const std::filesystem::path& out, const TestModelSpec& spec) {
  if (spec.assistant) return write_assistant(out, spec);
  model::testing::TestCheckpointOptions o;
  o.preset = spec.preset;
  o.seed = spec.seed;
  if (spec.dtype == "bf16") o.dtype = io::DType::BF16;
  else if (spec.dtype == "f16") o.dtype = io::DType::F16;
  else if (spec.dtype == "f32") o.dtype = io::DType::F32;
  else fail("make-test-model: --dtype must be bf16, f16 or f32, got '", spec.dtype, "'");
  o.shards = spec.shards;
  o.flat_config = spec.flat;
  o.prefix = spec.prefix;
  o.with_shared_kv = spec.shared_kv;
  o.qat = spec.qat;
  o.tokenizer_dir = spec.tokenizer.empty() ? tokenizer_dir() : spec.tokenizer;
  const auto t0 = std::chrono::steady_clock::now();
  // The towers are stored in the same safetensors file(s) as the text decoder; the
  // text-only layout (--flat-config) has no place for them.
  const bool vision = !spec.no_vision && !spec.flat;
  const bool audio = !spec.no_audio && !spec.flat;
  const std::string tower = o.preset == "e2b" || o.preset == "e4b" ? "full" : "tiny";
  if (vision || audio) {
    const int text_hidden =
        nlohmann::json::parse(model::testing::test_checkpoint_config_json(o))["text_config"]["hidden_size"].get<int>();
    if (vision) o.extra_tensors = vision::testing::test_vision_tensors(tower, text_hidden, o.dtype);
    if (audio)
      for (auto& t : audio::testing::test_audio_tensors(tower, text_hidden, o.dtype)) o.extra_tensors.push_back(std::move(t));
    o.extra_filler = [tower, text_hidden, seed = o.seed](const io::TensorSpec& t, const auto& write) {
      if (t.name.starts_with("model.audio_tower.") || t.name.starts_with("model.embed_audio."))
        audio::testing::fill_test_audio_tensor(tower, text_hidden, seed, t, write);
      else
        vision::testing::fill_test_vision_tensor(tower, text_hidden, seed, t, write);
    };
  }
  if (spec.towers_only) {
    if (!vision && !audio) fail("make-test-model: --towers-only with no tower to write");
    std::filesystem::create_directories(out);
    std::ofstream(std::filesystem::path(out) / "config.json") << model::testing::test_checkpoint_config_json(o);
    io::write_safetensors(std::filesystem::path(out) / "model.safetensors", o.extra_tensors, o.extra_filler);
  } else {
    model::testing::write_test_checkpoint(out, o);
  }
  if (vision) vision::testing::write_test_vision_config(out, tower);
  if (audio) audio::testing::write_test_audio_config(out, tower);
  std::fprintf(stderr, "make-test-model: wrote %s (%s, seed %llu) in %.1f s\n", out.c_str(), o.preset.c_str(),
               static_cast<unsigned long long>(o.seed),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace ringlm::cli
