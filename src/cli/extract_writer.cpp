#include "cli/extract_writer.h"

#include "util/error.h"

namespace ringlm::cli {

RecordWriter::RecordWriter(std::unique_ptr<engine::JsonlAppender> out, std::size_t window, OnWritten on_written)
    : out_(std::move(out)), window_(window), on_written_(std::move(on_written)) {}

void RecordWriter::write(const nlohmann::ordered_json& record) {
  if (!failure_.empty()) return;
  try {
    out_->append(record);
  } catch (const Error& e) {
    failure_ = e.what();
    return;
  }
  on_written_(record);
}

void RecordWriter::put(std::size_t position, nlohmann::ordered_json record) {
  if (window_ == 0) {
    write(record);
    return;
  }
  pending_.emplace(position, std::move(record));
  for (auto it = pending_.begin(); it != pending_.end() && it->first == next_; it = pending_.erase(it), ++next_)
    write(it->second);
}

}  // namespace ringlm::cli
