#include "engine/batch_output.h"

#include <fcntl.h>
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
  bool ok = false;
  std::string line;  // as written, without its newline
};

// The complete records of an output file, in file order.
std::vector<Record> read_records(const std::string& path) {
  std::vector<Record> out;
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
    out.push_back({rec["id"].get<std::string>(), ok != rec.end() && ok->is_boolean() && ok->get<bool>(), std::move(line)});
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

std::map<std::string, bool> read_output_state(const std::string& path) {
  std::map<std::string, bool> state;
  for (const auto& r : read_records(path)) state[r.id] = r.ok;
  return state;
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
  const std::string tmp = path + ".retry.tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(tmp, ": cannot create: ", std::strerror(errno));
  try {
    write_all(fd, kept, tmp);
    if (::fsync(fd) != 0) fail(tmp, ": fsync failed: ", std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, ": cannot replace with the compacted output: ", std::strerror(err));
  }
  // Make the rename itself durable.
  const auto dir = std::filesystem::absolute(path).parent_path();
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return dropped;
}

}  // namespace ringlm::engine
