#include "engine/batch_job.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

#include "util/error.h"

namespace ringlm::engine {

std::vector<InputRow> read_input_rows(const std::string& path, const std::string& id_field) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open");
  std::vector<InputRow> rows;
  std::map<std::string, std::size_t> seen;
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    InputRow row;
    row.line = n;
    row.id = "line-" + std::to_string(n);
    try {
      row.data = nlohmann::ordered_json::parse(line);
      if (!row.data.is_object()) {
        row.error = "line " + std::to_string(n) + " is not a JSON object";
      } else if (auto it = row.data.find(id_field); it != row.data.end()) {
        row.id = it->is_string() ? it->get<std::string>() : it->dump();
      }
    } catch (const nlohmann::json::exception& e) {
      row.error = "line " + std::to_string(n) + " is not valid JSON: " + e.what();
    }
    auto [it, inserted] = seen.emplace(row.id, n);
    if (!inserted) fail(path, ": line ", n, " repeats id '", row.id, "' of line ", it->second);
    rows.push_back(std::move(row));
  }
  if (in.bad()) fail(path, ": read error");
  return rows;
}

std::set<std::string> recover_output(const std::string& path) {
  std::set<std::string> done;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, ": cannot open for writing: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail(path, ": cannot stat");
  }
  std::string content(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < content.size()) {
    ssize_t r = ::pread(fd, content.data() + got, content.size() - got, static_cast<off_t>(got));
    if (r <= 0) {
      ::close(fd);
      fail(path, ": read error at byte ", got);
    }
    got += static_cast<std::size_t>(r);
  }
  // Everything up to the last newline is complete records; anything after it is torn.
  std::size_t keep = content.rfind('\n');
  keep = keep == std::string::npos ? 0 : keep + 1;
  if (keep < content.size()) {
    if (::ftruncate(fd, static_cast<off_t>(keep)) != 0) {
      ::close(fd);
      fail(path, ": cannot drop the torn last line: ", std::strerror(errno));
    }
    ::fsync(fd);
  }
  ::close(fd);
  std::size_t start = 0, lineno = 0;
  while (start < keep) {
    std::size_t end = content.find('\n', start);
    ++lineno;
    std::string_view line(content.data() + start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    try {
      auto rec = nlohmann::json::parse(line);
      if (!rec.is_object() || !rec.contains("id") || !rec["id"].is_string())
        fail(path, ": line ", lineno, " has no string \"id\"; not a ringlm extract output file?");
      done.insert(rec["id"].get<std::string>());
    } catch (const nlohmann::json::exception&) {
      fail(path, ": line ", lineno, " is not valid JSON; not a ringlm extract output file?");
    }
  }
  return done;
}

JsonlAppender::JsonlAppender(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path, ": cannot open for appending: ", std::strerror(errno));
  // Two jobs appending to one output would each redo the other's rows: the second one fails.
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    fd_ = -1;
    fail(path, ": another ringlm extract is writing this file");
  }
}

JsonlAppender::~JsonlAppender() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonlAppender::append(const nlohmann::ordered_json& record) {
  std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line.push_back('\n');
  // One write() of the whole line: a kill leaves either the full line or a torn tail that
  // recover_output() removes.
  std::size_t off = 0;
  while (off < line.size()) {
    ssize_t w = ::write(fd_, line.data() + off, line.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(path_, ": write failed: ", std::strerror(errno));
    }
    off += static_cast<std::size_t>(w);
  }
  ::fdatasync(fd_);
}

std::string fill_prompt_template(const std::string& tmpl, const nlohmann::ordered_json& row) {
  std::string out;
  out.reserve(tmpl.size() + 256);
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    char c = tmpl[i];
    if ((c == '{' || c == '}') && i + 1 < tmpl.size() && tmpl[i + 1] == c) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    std::size_t close = tmpl.find('}', i);
    if (close == std::string::npos) fail("prompt template: '{' at byte ", i, " is not closed");
    std::string field = tmpl.substr(i + 1, close - i - 1);
    auto it = row.find(field);
    if (it == row.end()) fail("the row has no field '", field, "' used by the prompt template");
    out += it->is_string() ? it->get<std::string>() : it->dump();
    i = close;
  }
  return out;
}

}  // namespace ringlm::engine
