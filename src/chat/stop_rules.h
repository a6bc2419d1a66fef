// When generation stops: on any end-of-sequence id the model directory declares, or when
// the detokenized text contains a user-given stop string (matched across token boundaries).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ringlm::chat {

// Stop token ids: generation_config.json's `eos_token_id` (an int or a list) united with
// config.json's (top level and the nested `text_config`). Gemma 4: {1, 106, 50}.
struct StopIds {
  std::vector<std::int32_t> ids;  // sorted, unique

  // Reads whichever of the two files exist in `dir`; throws ringlm::Error naming the file
  // and field for invalid JSON or a non-integer id. Missing files contribute nothing.
  static StopIds load(const std::filesystem::path& dir);
  bool contains(std::int32_t id) const;
  void add(std::int32_t id);
};

// Incremental stop-string matcher over a stream of decoded text pieces. Text that could be
// the beginning of a stop string is held back until it is known not to be one, so a stop
// string is never partly emitted. Holding back at most (longest stop string - 1) bytes.
class StopStringMatcher {
 public:
  StopStringMatcher() = default;
  // Empty stop strings are ignored.
  explicit StopStringMatcher(std::vector<std::string> stop_strings);

  // Consumes the next piece of decoded text and appends to `out` the text that is now safe
  // to emit. When a stop string completes, `out` receives the text before it, stopped()
  // becomes true and later calls emit nothing.
  void push(std::string_view piece, std::string& out);
  // End of generation without a stop string: appends the held-back text to `out`.
  void flush(std::string& out);

  bool stopped() const { return matched_ >= 0; }
  // The stop string that ended generation ("" if none).
  const std::string& matched() const;
  bool empty() const { return stops_.empty(); }

 private:
  std::vector<std::string> stops_;
  std::string pending_;  // held-back text, always shorter than the longest stop string
  int matched_ = -1;
};

}  // namespace ringlm::chat
