// What a record of `ringlm extract` was made with, as a short string stored in every record
// ("fingerprint"), so that a resume with other settings does not keep stale rows (issue
// #30): four 32-bit FNV-1a hashes, of the schema (with --schema-mode and --json-style), of
// the prompt (template, instructions, --no-schema-in-prompt, --trust-control-tokens,
// --image-tokens), of the model (its files' names and sizes, --mmproj, --weights,
// --activations, --kv-type) and of the sampling (temperature, top-k/p, min-p, repeat
// penalty, seed; not --max-tokens, which changes only replies it cuts, and those are failed
// records). Not a security check: a change detector that names what changed.
#pragma once

#include <string>

#include "cli/extract_options.h"

namespace ringlm::cli {

// "xxxxxxxx-xxxxxxxx-xxxxxxxx-xxxxxxxx": schema, prompt, model, sampling.
std::string extract_fingerprint(const ExtractOptions& o, const std::string& schema_text,
                                const std::string& model_dir);

// What differs between two fingerprints, in words ("the schema and the sampling"); for a
// string that is not a fingerprint, "the settings".
std::string fingerprint_difference(const std::string& recorded, const std::string& now);

}  // namespace ringlm::cli
