// The durable JSONL batch job behind `ringlm extract`: every input row becomes one guided
// generation, and its result is appended to the output file as one line as soon as it is
// done. The output file is the job's only state: a re-run reads the ids already there and
// continues with the rest, so a killed job loses at most the row in flight and never
// duplicates one.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ringlm::engine {

struct InputRow {
  std::size_t line = 0;       // 1-based line number in the input file
  std::string id;             // the row's id (its `id` field, or "line-N")
  nlohmann::ordered_json data;
  std::string error;          // non-empty: the line is not a JSON object (recorded as a failure)
};

// Reads a JSONL file ("-": standard input); blank lines are skipped; duplicate ids are an
// error naming both lines. Folders and devices are refused, and a line over kMaxInputLine
// bytes is an error naming it (a stream without newlines cannot grow without bound).
std::vector<InputRow> read_input_rows(const std::string& path, const std::string& id_field);
inline constexpr std::size_t kMaxInputLine = std::size_t{64} << 20;

// Prepares `path` for appending: creates it if missing, drops a torn last line (a line
// without its newline, left by a kill or a failed write) and returns the ids already written.
std::set<std::string> recover_output(const std::string& path);

// Appends one JSON line with a single write() and flushes it to disk (fdatasync). Holds an
// exclusive lock on the file while open, so a second job on the same output fails at once.
// "-" is standard output: no lock, and each line goes out whole as it is appended.
class JsonlAppender {
 public:
  explicit JsonlAppender(const std::string& path);
  ~JsonlAppender();
  JsonlAppender(const JsonlAppender&) = delete;
  JsonlAppender& operator=(const JsonlAppender&) = delete;
  // Throws ringlm::Error naming the file when the write or the flush fails (a full disk, a
  // size limit, an I/O error). The file is then cut back to where it was before the call
  // (so it never ends in a torn line), and every record appended before is on disk.
  void append(const nlohmann::ordered_json& record);
  std::size_t appended() const { return appended_; }  // records this object wrote, all flushed

 private:
  std::string path_;
  int fd_ = -1;
  bool stdout_ = false;
  bool regular_ = true;  // false for standard output that is a pipe or terminal: no flush to disk
  std::size_t appended_ = 0;
};

// Fills `{field}` placeholders of `tmpl` from the row (strings as is, other values as JSON);
// `{{` and `}}` are literal braces. Throws ringlm::Error naming a field the row lacks.
std::string fill_prompt_template(const std::string& tmpl, const nlohmann::ordered_json& row);

}  // namespace ringlm::engine
