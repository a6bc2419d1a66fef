// The flags of `ringlm extract` (cmd_extract.cpp registers them), shared by the files that
// build its prompts (extract_prompts.h), its settings fingerprint (extract_fingerprint.h)
// and its output (extract_writer.h).
#pragma once

#include <string>

#include "cli/common_options.h"

namespace ringlm::cli {

struct ExtractOptions {
  ModelFlags model;
  SamplingFlags sampling;
  std::string schema_file, input, output;
  std::string prompt_template = "{text}";
  int image_tokens = 0;
  std::string instructions =
      "Extract the requested fields from the user's message. Reply with one JSON object that "
      "follows this JSON Schema:";
  std::string id_field = "id";
  int limit = 0;
  bool progress = false;
  bool trust_control_tokens = false;
  bool no_progress = false;
  bool retry_failed = false;
  bool schema_in_prompt = true;
  bool force_resume = false;   // keep records made with other settings (another fingerprint)
  bool ordered = false;        // write records in input order (buffering early finishers)
  std::string allow_local_media;  // rows' media may lie anywhere under this folder (default: the input's folder)
  int parallel = 8;
  DraftFlags draft;  // speculative decoding (engine/draft.h)
  std::string shard;
};

}  // namespace ringlm::cli
