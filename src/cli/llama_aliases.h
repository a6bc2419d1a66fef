// llama.cpp's multi-letter single-dash flags (-np, -ngl), which CLI11 cannot name (its short
// names are one letter): rewritten to their long ringlm spellings before parsing, so that
// `ringlm serve -np 4 -ngl 99` means what it means to a llama.cpp user.
#pragma once

#include <string>
#include <vector>

namespace ringlm::cli {

// argv with each llama.cpp alias ("-np", "-np=4", "-ngl") replaced by its long flag; arguments
// after "--" are left alone.
std::vector<std::string> expand_llama_aliases(int argc, char** argv);

}  // namespace ringlm::cli
