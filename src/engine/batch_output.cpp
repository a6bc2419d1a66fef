#include "engine/batch_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "util/error.h"

namespace ringlm::engine {

namespace {

struct Record {
  std::string id;
  RecordState state;
  std::string line;  // as written, without its newline
};

// The complete records of an output file, in file order.
std::vector<Record> read_records(const std::string& path) {
  std::vector<Record> out;
  if (path == "-") return out;  // standard output: nothing to resume from
  std::ifstream in(path, std::ios::binary);
  if (!in) return out;  // no output yet
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string content = ss.str();
  std::size_t start = 0, lineno = 0;
  for (;;) {
    const std::size_t end = content.find('\n', start);
    if (end == std::string::npos) break;  // the rest (if any) is a torn line
    ++lineno;
    std::string line = content.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    auto rec = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (rec.is_discarded()) fail(path, ": line ", lineno, " is not valid JSON; not a ringlm extract output file?");
    if (!rec.is_object() || !rec.contains("id") || !rec["id"].is_string())
      fail(path, ": line ", lineno, " has no string \"id\"; not a ringlm extract output file?");
    const auto ok = rec.find("ok");
    const auto fp = rec.find("fingerprint");
    RecordState st{ok != rec.end() && ok->is_boolean() && ok->get<bool>(),
                   fp != rec.end() && fp->is_string() ? fp->get<std::string>() : std::string()};
    out.push_back({rec["id"].get<std::string>(), std::move(st), std::move(line)});
  }
  return out;
}

void write_all(int fd, const std::string& data, const std::string& path) {
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t w = ::write(fd, data.data() + off, data.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail(path, ": write failed: ", std::strerror(errno));
    off += static_cast<std::size_t>(w);
  }
}

}  // namespace

std::map<std::string, RecordState> read_output_state(const std::string& path) {
  std::map<std::string, RecordState> state;
  for (auto& r : read_records(path)) state[r.id] = std::move(r.state);
  return state;
}

void check_output_path(const std::string& output, const std::vector<std::string>& inputs) {
  if (output == "-") return;
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return;  // created later (a dangling link: at its target)
  if (!S_ISREG(out.st_mode))
    fail(output, ": the output is not a regular file (", S_ISDIR(out.st_mode) ? "a folder" : S_ISFIFO(out.st_mode) ? "a pipe" : "a device or socket",
         "); --output - writes to standard output");
  for (const auto& in : inputs) {
    struct stat st {};
    const int r = in == "-" ? ::fstat(STDIN_FILENO, &st) : ::stat(in.c_str(), &st);
    if (r == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino)
      fail(output, ": the output is the same file as ", in == "-" ? "standard input" : in,
           "; records appended to it would be read as rows (and --retry-failed would replace it)");
  }
}

std::size_t drop_records(const std::string& path, const std::set<std::string>& redo) {
  const auto records = read_records(path);
  std::map<std::string, std::size_t> last;  // id -> index of its final record
  for (std::size_t i = 0; i < records.size(); ++i) last[records[i].id] = i;
  std::string kept;
  std::size_t dropped = 0, kept_records = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (last[records[i].id] != i) continue;  // superseded by a later record
    if (redo.count(records[i].id)) {
      ++dropped;
      continue;
    }
    kept += records[i].line;
    kept += '\n';
    ++kept_records;
  }
  if (kept_records == records.size()) return 0;  // nothing superseded or dropped: leave the file as it is
  // Rewrite the file a symlink leads to, in its own folder (a rename cannot cross file
  // systems, and renaming over the link would turn it into a plain file).
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::canonical(path, ec);
  if (ec) fail(path, ": cannot resolve: ", ec.message());
  struct stat old {};
  if (::stat(target.c_str(), &old) != 0) fail(target.string(), ": cannot stat: ", std::strerror(errno));
  const std::string tmp = target.string() + ".retry.tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fail(tmp, ": cannot create: ", std::strerror(errno));
  try {
    // The old file's mode (past the umask) and owner; a non-root user may not be able to
    // give a file away, and then it keeps theirs, as a new file would.
    if (::fchmod(fd, old.st_mode & 07777) != 0) fail(tmp, ": cannot set its mode: ", std::strerror(errno));
    if (::fchown(fd, old.st_uid, old.st_gid) != 0 && errno != EPERM)
      fail(tmp, ": cannot set its owner: ", std::strerror(errno));
    write_all(fd, kept, tmp);
    if (::fsync(fd) != 0) fail(tmp, ": fsync failed: ", std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(tmp, ": close failed: ", std::strerror(err));
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, ": cannot replace with the compacted output: ", std::strerror(err));
  }
  // Make the rename itself durable.
  const auto dir = target.parent_path();
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return dropped;
}

}  // namespace ringlm::engine
