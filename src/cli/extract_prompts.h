// The prompts of `ringlm extract`: each row's chat request (the system message with the
// instructions and the schema, the row's user message from --template) and the soft tokens
// of the media it names. Media paths in a row are taken relative to the input file's folder
// and must stay under it (absolute paths elsewhere, "../" out of it and symlinks are
// refused); --allow-local-media DIR widens that folder to DIR. Files are opened beneath the
// folder by the kernel (io/beneath.h), as `serve --allow-local-media` does.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/extract_options.h"
#include "engine/batch_job.h"
#include "engine/batch_scheduler.h"
#include "engine/media_prompt.h"

namespace ringlm::cli {

class RowPrompts {
 public:
  RowPrompts(engine::Engine& engine, const ExtractOptions& o, const nlohmann::json& schema);

  // The template's markup becomes control tokens, the row's text stays text (media rows too).
  std::vector<std::int32_t> render(const std::string& user);

  // The row's request (prompt, and the soft-token embeddings of its media). Throws
  // ringlm::Error for a row that cannot be built (a missing field, a refused media path).
  engine::SequenceRequest request(const engine::InputRow& row, const engine::GenerationParams& params,
                                  int* image_tokens, int* audio_tokens);

 private:
  chat::ChatRequest chat_request(const nlohmann::ordered_json& content) const;
  // The bytes of the files a row's `one`/`many` fields name, read beneath media_root_.
  std::vector<std::pair<std::string, std::string>> row_files(const nlohmann::ordered_json& row, const char* one,
                                                             const char* many) const;

  engine::Engine& engine_;
  const ExtractOptions& o_;
  engine::MediaEncoder media_;
  std::filesystem::path input_dir_;   // relative media paths start here
  std::filesystem::path media_root_;  // and must stay under this (input_dir_ or --allow-local-media)
  nlohmann::ordered_json system_message_;
};

}  // namespace ringlm::cli
