// Writes a random-weight Gemma 4 checkpoint (HF layout, with tiny or full-size vision and
// audio towers): the work behind `ringlm make-test-model`, and the built-in demo model that an
// installed ringlm writes to the user's cache on first use (demo_model.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace ringlm::cli {

struct TestModelSpec {
  std::string preset = "tiny", dtype = "bf16", prefix = "model.language_model.";
  std::filesystem::path tokenizer;  // empty: the Gemma 4 tokenizer this binary was built with (tokenizer_dir())
  std::uint64_t seed = 1;
  int shards = 1;
  bool assistant = false;  // --assistant: a Gemma 4 assistant (MTP drafter), model/testing/test_assistant.h
  bool flat = false, shared_kv = false, no_vision = false, no_audio = false, towers_only = false, qat = false;
};

void write_test_model(const std::filesystem::path& out, const TestModelSpec& spec);

// The Gemma 4 tokenizer files shipped with ringlm: <prefix>/share/ringlm/gemma4-tokenizer next
// to an installed binary, else the source tree's assets/gemma4-tokenizer (a build tree).
std::filesystem::path tokenizer_dir();

}  // namespace ringlm::cli
