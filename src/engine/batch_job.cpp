#include "engine/batch_job.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "util/error.h"
#include "util/json_parse.h"

namespace ringlm::engine {

namespace {

// Opens an input ("-": standard input) for reading; a folder or a device is refused by name.
std::FILE* open_input(const std::string& path) {
  if (path == "-") return stdin;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    ::close(fd);
    fail(path, ": not a file of rows (a folder or a device)");
  }
  std::FILE* f = ::fdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    fail(path, ": cannot open: ", std::strerror(errno));
  }
  return f;
}

// Calls on_line(n, text) for every line (1-based; the last may lack its newline), holding at
// most one line plus one block in memory.
template <class F>
void for_each_line(std::FILE* f, const std::string& name, F&& on_line) {
  std::vector<char> block(1 << 16);
  std::string line;
  std::size_t n = 0;
  for (;;) {
    const std::size_t got = std::fread(block.data(), 1, block.size(), f);
    std::size_t start = 0;
    for (std::size_t i = 0; i < got; ++i) {
      if (block[i] != '\n') continue;
      line.append(block.data() + start, i - start);
      on_line(++n, line);
      line.clear();
      start = i + 1;
    }
    line.append(block.data() + start, got - start);
    if (line.size() > kMaxInputLine) fail(name, ": line ", n + 1, " is longer than ", kMaxInputLine >> 20, " MiB");
    if (got < block.size()) break;
  }
  if (std::ferror(f)) fail(name, ": read error");
  if (!line.empty()) on_line(++n, line);
}

}  // namespace

std::vector<InputRow> read_input_rows(const std::string& path, const std::string& id_field) {
  std::FILE* in = open_input(path);
  const std::string name = path == "-" ? "standard input" : path;
  std::vector<InputRow> rows;
  std::map<std::string, std::size_t> seen;
  auto add = [&](std::size_t n, const std::string& line) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) return;
    InputRow row;
    row.line = n;
    row.id = "line-" + std::to_string(n);
    try {
      row.data = ringlm::parse_json(line);  // linear in the line (ordered_json::parse is not: issue #28)
      if (!row.data.is_object()) {
        row.error = "line " + std::to_string(n) + " is not a JSON object";
      } else if (auto it = row.data.find(id_field); it != row.data.end()) {
        row.id = it->is_string() ? it->get<std::string>() : it->dump();
      }
    } catch (const ringlm::Error& e) {
      row.error = "line " + std::to_string(n) + " is not valid JSON: " + e.what();
    } catch (const nlohmann::json::exception& e) {
      row.error = "line " + std::to_string(n) + " is not valid JSON: " + e.what();
    }
    auto [it, inserted] = seen.emplace(row.id, n);
    if (!inserted) fail(name, ": line ", n, " repeats id '", row.id, "' of line ", it->second);
    rows.push_back(std::move(row));
  };
  try {
    for_each_line(in, name, add);
  } catch (...) {
    if (in != stdin) std::fclose(in);
    throw;
  }
  if (in != stdin) std::fclose(in);
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
    if (::fsync(fd) != 0) {
      const int err = errno;
      ::close(fd);
      fail(path, ": cannot flush after dropping the torn last line: ", std::strerror(err));
    }
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
  if (path == "-") {
    path_ = "standard output";
    stdout_ = true;
    fd_ = ::dup(STDOUT_FILENO);
    if (fd_ < 0) fail("standard output: ", std::strerror(errno));
    struct stat st {};
    regular_ = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
    return;
  }
  // O_NONBLOCK: a FIFO named as the output must be refused, not wait for a reader.
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd_ < 0) fail(path, ": cannot open for appending: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    fail(path, ": not a regular file (--output - writes to standard output)");
  }
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
  // The file's length before this record: a failed write or flush cuts the file back to it,
  // so a record is either whole and on disk, or absent (and its row is done again on resume).
  const off_t before = regular_ ? ::lseek(fd_, 0, stdout_ ? SEEK_CUR : SEEK_END) : 0;
  const char* failed = nullptr;
  int err = 0;
  // One write() of the whole line (a loop only for a partial write): a kill leaves either the
  // full line or a torn tail that recover_output() removes.
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t w = ::write(fd_, line.data() + off, line.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      failed = "write failed";
      err = w < 0 ? errno : EIO;
      break;
    }
    off += static_cast<std::size_t>(w);
  }
  if (!failed && regular_ && ::fdatasync(fd_) != 0) {
    failed = "flush to disk (fdatasync) failed";
    err = errno;
  }
  if (!failed) {
    ++appended_;
    return;
  }
  std::string cut;
  if (regular_ && before >= 0 && ::ftruncate(fd_, before) != 0)
    cut = std::string("; cutting back the partial record failed too (") + std::strerror(errno) +
          "), the next run drops it";
  fail(path_, ": ", failed, ": ", std::strerror(err), cut);
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
