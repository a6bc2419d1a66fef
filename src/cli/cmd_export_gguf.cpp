// `ringlm export-gguf DIR OUT.gguf`: writes a Hugging Face Gemma 4 checkpoint directory
// (config.json, safetensors, tokenizer files) as one gemma4 GGUF file, optionally quantized.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "io/safetensors.h"
#include "model/gguf_model.h"
#include "tokenizer/gguf_tokenizer_loader.h"
#include "util/error.h"

namespace {

ringlm::io::DType parse_type(std::string t) {
  for (auto& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  using ringlm::io::DType;
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q4_K,
                  DType::Q5_K, DType::Q6_K})
    if (t == ringlm::io::dtype_name(d)) return d;
  ringlm::fail("--type ", t, ": expected one of f32, f16, bf16, q8_0, q4_0, q4_1, q4_k, q5_k, q6_k");
}

}  // namespace

RINGLM_COMMAND(export_gguf) {
  struct Options {
    std::string dir, out, type = "bf16";
    bool no_tokenizer = false;
  };
  static Options opt;
  auto* sub = app.add_subcommand("export-gguf", "Write a Hugging Face Gemma 4 checkpoint directory as a GGUF file");
  sub->add_option("dir", opt.dir, "Checkpoint directory (config.json + safetensors)")->required();
  sub->add_option("out", opt.out, "Output .gguf file")->required();
  sub->add_option("--type", opt.type, "Matrix type: f32 f16 bf16 q8_0 q4_0 q4_1 q4_k q5_k q6_k")->capture_default_str();
  sub->add_flag("--no-tokenizer", opt.no_tokenizer, "Do not embed the tokenizer (tokenizer.json)");
  sub->callback([] {
    const auto t0 = std::chrono::steady_clock::now();
    const std::filesystem::path dir(opt.dir);
    const auto config_path = dir / "config.json";
    std::ifstream in(config_path);
    if (!in) ringlm::fail(config_path.string(), ": cannot open");
    nlohmann::json config;
    try {
      config = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      ringlm::fail(config_path.string(), ": invalid JSON: ", e.what());
    }
    const nlohmann::json text = config.contains("text_config") ? config["text_config"] : config;
    const auto source = ringlm::io::open_safetensors_dir(dir);
    std::optional<ringlm::io::GgufTokenizerData> tok;
    if (!opt.no_tokenizer && std::filesystem::exists(dir / "tokenizer.json")) tok = ringlm::gguf_tokenizer_from_hf(dir);
    const auto result = ringlm::model::export_gemma4_gguf(*source, text, tok ? &*tok : nullptr, opt.out,
                                                          {.matrix_type = parse_type(opt.type)});
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %d tensors (%d matrices kept as F16: rows not a multiple of the block), %s tokenizer, "
                "%llu bytes, %.2f s\n",
                opt.out.c_str(), result.tensors, result.fallback_f16, tok ? "with" : "no",
                static_cast<unsigned long long>(std::filesystem::file_size(opt.out)), secs);
  });
}
