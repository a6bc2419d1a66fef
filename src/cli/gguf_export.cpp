#include "cli/gguf_export.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "model/gguf_model.h"
#include "tokenizer/gguf_tokenizer_loader.h"
#include "util/error.h"

namespace ringlm::cli {

namespace {

io::DType parse_type(std::string t) {
  for (auto& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  using io::DType;
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q4_K,
                  DType::Q5_K, DType::Q6_K})
    if (t == io::dtype_name(d)) return d;
  fail("--type ", t, ": expected one of f32, f16, bf16, q8_0, q4_0, q4_1, q4_k, q5_k, q6_k");
}

}  // namespace

void export_gguf(const std::string& dir_name, const std::string& out, const std::string& type, bool no_tokenizer) {
  const auto t0 = std::chrono::steady_clock::now();
  const io::DType matrix_type = parse_type(type);
  const std::filesystem::path dir(dir_name);
  const auto config_path = dir / "config.json";
  std::ifstream in(config_path);
  if (!in) fail(config_path.string(), ": cannot open");
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(config_path.string(), ": invalid JSON: ", e.what());
  }
  const nlohmann::json text = config.contains("text_config") ? config["text_config"] : config;
  const auto source = io::open_safetensors_dir(dir);
  std::optional<io::GgufTokenizerData> tok;
  if (!no_tokenizer && std::filesystem::exists(dir / "tokenizer.json")) tok = gguf_tokenizer_from_hf(dir);
  const auto result = model::export_gemma4_gguf(*source, text, tok ? &*tok : nullptr, out, {.matrix_type = matrix_type});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: %d tensors (%d matrices kept as F16: rows not a multiple of the block), %s tokenizer, "
              "%llu bytes, %.2f s\n",
              out.c_str(), result.tensors, result.fallback_f16, tok ? "with" : "no",
              static_cast<unsigned long long>(std::filesystem::file_size(out)), secs);
  if (result.q4.blocks > 0)
    std::printf("%s: q4_0 blocks: %llu; on an int4 lattice %llu, stored exactly %llu (%.2f %%); lattice blocks whose "
                "scale GGUF's f16 d could not hold exactly: %llu\n",
                out.c_str(), static_cast<unsigned long long>(result.q4.blocks),
                static_cast<unsigned long long>(result.q4.lattice), static_cast<unsigned long long>(result.q4.exact),
                100.0 * static_cast<double>(result.q4.exact) / static_cast<double>(result.q4.blocks),
                static_cast<unsigned long long>(result.q4.lattice - result.q4.exact));
}

}  // namespace ringlm::cli
