// Fixed inputs of `ringlm bench` (the model card's harness): the extraction schema and its
// ten samples (five long, five short), and the filler/needles of the long-context runs.
#pragma once

#include <string>
#include <vector>

namespace ringlm::engine::bench_data {

// JSON Schema of the guided-extraction run; `category` and `sentiment` are the enum fields
// whose values are checked for "enum-clean".
extern const char* const kExtractionSchema;

struct Sample {
  const char* text;
  bool is_long;
};
const std::vector<Sample>& extraction_samples();

// Deterministic filler prose (no facts a needle question could be answered from).
std::string filler_paragraph(int index);

struct Needle {
  const char* fact;      // planted sentence
  const char* question;  // asked at the end
  const char* answer;    // must appear verbatim in the reply
};
const std::vector<Needle>& needles();

}  // namespace ringlm::engine::bench_data
