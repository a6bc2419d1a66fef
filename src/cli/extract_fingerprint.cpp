#include "cli/extract_fingerprint.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

namespace ringlm::cli {

namespace {

namespace fs = std::filesystem;

// FNV-1a over the bytes, folded to 32 bits and written as 8 hex digits.
std::string hash8(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>((h >> 32) ^ (h & 0xffffffffu)));
  return buf;
}

// A model path's identity without reading its weights: for a folder, the names and sizes of
// the files in it (a copy or a move keeps them; other weights or a re-conversion do not);
// for a file (a GGUF), its name and size.
nlohmann::json files_of(const std::string& path) {
  nlohmann::json out = nlohmann::json::array();
  if (path.empty()) return out;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::pair<std::string, std::uintmax_t>> files;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      const std::string name = e.path().filename().string();
      if (name.empty() || name[0] == '.' || !e.is_regular_file(ec)) continue;
      files.emplace_back(name, e.file_size(ec));
    }
    std::sort(files.begin(), files.end());
    for (const auto& [name, size] : files) out.push_back({name, size});
  } else {
    out.push_back({fs::path(path).filename().string(), fs::file_size(path, ec)});
  }
  return out;
}

}  // namespace

std::string extract_fingerprint(const ExtractOptions& o, const std::string& schema_text, const std::string& model_dir) {
  // The schema as parsed and dumped: reindenting the file does not count as a change.
  std::string schema_canon = schema_text;
  try {
    schema_canon = nlohmann::json::parse(schema_text).dump();
  } catch (const std::exception&) {
  }
  const nlohmann::json schema = {schema_canon, o.model.schema_mode, o.model.json_style};
  const nlohmann::json prompt = {o.prompt_template, o.instructions, o.schema_in_prompt, o.trust_control_tokens,
                                 o.image_tokens};
  const nlohmann::json model = {files_of(model_dir), files_of(o.model.mmproj.empty() ? o.model.hf_mmproj : o.model.mmproj), o.model.weights, o.model.activations,
                                o.model.kv_type};
  const auto& s = o.sampling;
  // Not --max-tokens: a reply that ended before the limit is the same under any larger one,
  // and one the limit cut is a failed record, which --retry-failed (with more tokens) is for.
  const nlohmann::json sampling = {s.temperature, s.top_k, s.top_p, s.min_p, s.repeat_penalty, s.seed};
  return hash8(schema.dump()) + "-" + hash8(prompt.dump()) + "-" + hash8(model.dump()) + "-" + hash8(sampling.dump());
}

std::string fingerprint_difference(const std::string& recorded, const std::string& now) {
  static const char* const kParts[] = {"the schema", "the prompt (template or instructions)", "the model",
                                       "the sampling"};
  if (recorded.size() != now.size() || recorded.size() != 35) return "the settings";
  std::vector<std::string> changed;
  for (int i = 0; i < 4; ++i)
    if (recorded.compare(static_cast<std::size_t>(i) * 9, 8, now, static_cast<std::size_t>(i) * 9, 8) != 0)
      changed.push_back(kParts[i]);
  if (changed.empty()) return "nothing";
  std::string out = changed[0];
  for (std::size_t i = 1; i < changed.size(); ++i) out += (i + 1 == changed.size() ? " and " : ", ") + changed[i];
  return out;
}

}  // namespace ringlm::cli
