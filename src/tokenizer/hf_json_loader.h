// Reads a Hugging Face tokenizer (tokenizer.json and the config files beside it) into
// TokenizerParts. Only the loading lives here; the algorithm is in Tokenizer::from_parts.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer_parts.h"

namespace ringlm {

// Parses the text of a tokenizer.json. `name` prefixes error messages (the file path).
// Throws ringlm::Error naming the field at fault (e.g. "model.merges[12]").
TokenizerParts parse_hf_tokenizer_json(std::string_view json, const std::string& name);

// Fills bos/eos/add_bos from `dir`'s tokenizer_config.json, generation_config.json and
// config.json, each optional.
void apply_hf_config_files(TokenizerParts& parts, const std::filesystem::path& dir);

// Everything above for a directory holding tokenizer.json, or for a tokenizer.json path.
TokenizerParts load_hf_tokenizer_parts(const std::filesystem::path& dir_or_json);

}  // namespace ringlm
