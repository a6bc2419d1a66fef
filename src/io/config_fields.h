// Reading the small JSON config files of a checkpoint (config.json sections, processor and
// feature-extractor configs): typed field reads that name the file and the field path on any
// error, and the file/JSON loading they start from. Shared by the vision and audio configs.
#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "util/error.h"

namespace ringlm::io {

struct ConfigFields {
  const nlohmann::json& obj;
  std::string source, path;  // the file, and the field path so far ("vision_config.")

  bool has(const char* f) const { return obj.contains(f) && !obj[f].is_null(); }
  [[noreturn]] void bad(const char* f, const std::string& why) const { fail(source, ": field ", path, f, ": ", why); }
  int integer(const char* f, int fallback, long long min, long long max) const {
    if (!has(f)) return fallback;
    const nlohmann::json& v = obj[f];
    if (!v.is_number_integer()) bad(f, "expected an integer, got " + v.dump());
    const long long n = v.get<long long>();
    if (n < min || n > max)
      bad(f, "value " + std::to_string(n) + " out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return static_cast<int>(n);
  }
  double number(const char* f, double fallback, double min, double max) const {
    if (!has(f)) return fallback;
    const nlohmann::json& v = obj[f];
    if (!v.is_number()) bad(f, "expected a number, got " + v.dump());
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < min || d > max) bad(f, "value " + v.dump() + " out of range");
    return d;
  }
  bool boolean(const char* f, bool fallback) const {
    if (!has(f)) return fallback;
    if (!obj[f].is_boolean()) bad(f, "expected true or false, got " + obj[f].dump());
    return obj[f].get<bool>();
  }
  // A list of exactly n finite numbers; empty when the field is absent.
  std::vector<double> numbers(const char* f, std::size_t n) const {
    if (!has(f)) return {};
    const nlohmann::json& v = obj[f];
    if (!v.is_array() || v.size() != n) bad(f, "expected a list of " + std::to_string(n) + " numbers");
    std::vector<double> out;
    for (const nlohmann::json& x : v) {
      if (!x.is_number() || !std::isfinite(x.get<double>())) bad(f, "expected numbers, got " + x.dump());
      out.push_back(x.get<double>());
    }
    return out;
  }
};

inline nlohmann::json parse_config_json(const std::string& text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(source, ": not valid JSON: ", e.what());
  }
}

inline std::string read_config_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(p.string(), ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ringlm::io
