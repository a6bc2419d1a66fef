#include "io/bounded_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace ringlm::io {

std::string read_bounded_file(const std::string& path, std::size_t max_bytes, const std::string& what) {
  const std::string name = path == "-" ? std::string("standard input") : path;
  const int fd = path == "-" ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(what, " ", name, ": cannot open: ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() {
      if (fd != STDIN_FILENO) ::close(fd);
    }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(what, " ", name, ": cannot stat: ", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(what, " ", name, ": is a folder, not a file");
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) fail(what, " ", name, ": is a device, not a file");
  const auto too_big = [&] { fail(what, " ", name, ": larger than the limit of ", max_bytes, " bytes"); };
  if (S_ISREG(st.st_mode) && static_cast<std::size_t>(st.st_size) > max_bytes) too_big();
  std::string out;
  char block[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, block, sizeof block);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(what, " ", name, ": read error: ", std::strerror(errno));
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) too_big();
    out.append(block, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace ringlm::io
