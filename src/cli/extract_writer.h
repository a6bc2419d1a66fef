// Where `ringlm extract` puts its records: the output (engine::JsonlAppender: one write and
// one fdatasync per record, the file cut back on a failure), either as rows finish or, with
// --ordered, in input order. Ordered mode buffers the records that finish ahead of an
// earlier row, and the caller admits a row only while it is within `window` rows of the
// first one not yet written (may_admit), so at most window - 1 records wait in memory
// whatever the rows' lengths. A failed write is kept (failure()) rather than thrown through
// the scheduler's callback: the run stops at the next step, and nothing more is written.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/batch_job.h"

namespace ringlm::cli {

class RecordWriter {
 public:
  using OnWritten = std::function<void(const nlohmann::ordered_json& record)>;
  // window 0: not ordered (each record is written when it is put).
  RecordWriter(std::unique_ptr<engine::JsonlAppender> out, std::size_t window, OnWritten on_written);

  // The record of the row at `position` in this run's list of rows to do (0, 1, 2, ...; each
  // once). Written now, or kept until the rows before it are written.
  void put(std::size_t position, nlohmann::ordered_json record);
  // Whether the row at `position` may start (always, unless ordered and too far ahead).
  bool may_admit(std::size_t position) const { return window_ == 0 || position < next_ + window_; }

  const std::string& failure() const { return failure_; }  // "" while every write succeeded
  std::size_t written() const { return out_->appended(); }
  std::size_t waiting() const { return pending_.size(); }  // ordered: records held back

 private:
  void write(const nlohmann::ordered_json& record);

  std::unique_ptr<engine::JsonlAppender> out_;
  std::size_t window_;
  OnWritten on_written_;
  std::size_t next_ = 0;  // ordered: the first position not yet written
  std::map<std::size_t, nlohmann::ordered_json> pending_;
  std::string failure_;
};

}  // namespace ringlm::cli
