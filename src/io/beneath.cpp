#include "io/beneath.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#endif

namespace ringlm::io {

namespace fs = std::filesystem;

namespace {

// Owns one descriptor.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd >= 0) ::close(fd);
      fd = o.fd;
      o.fd = -1;
    }
    return *this;
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

constexpr int kFileFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;  // NONBLOCK: a FIFO must not hang the open

BeneathRead status_of(BeneathStatus s, int err = 0) {
  BeneathRead r;
  r.status = s;
  if (err) r.detail = std::strerror(err);
  return r;
}

// The status an open's errno means.
BeneathRead open_error(int err) {
  switch (err) {
    case EXDEV:   // RESOLVE_BENEATH: the walk would leave the folder
    case ELOOP:   // a symlink on the way (RESOLVE_NO_SYMLINKS, O_NOFOLLOW)
      return status_of(BeneathStatus::outside);
    case ENOENT:
    case ENOTDIR:
      return status_of(BeneathStatus::missing);
    default:
      return status_of(BeneathStatus::unreadable, err);
  }
}

// The kernel's resolver, or -2 when this kernel (or a seccomp filter) lacks openat2.
int open_with_openat2(int root, const fs::path& rel, int* err) {
#if defined(SYS_openat2) && defined(RESOLVE_BENEATH)
  open_how how{};
  how.flags = static_cast<std::uint64_t>(kFileFlags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0; attempt < 64; ++attempt) {
    const long fd = ::syscall(SYS_openat2, root, rel.c_str(), &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    *err = errno;
    // EAGAIN: a rename or mount raced the ".." check; the kernel asks for a retry.
    if (*err == EAGAIN || *err == EINTR) continue;
    if (*err == ENOSYS || *err == EPERM || *err == E2BIG) return -2;
    return -1;
  }
  return -1;
#else
  (void)root, (void)rel, (void)err;
  return -2;
#endif
}

// The fallback: one component at a time, O_NOFOLLOW, ".." answered from the descriptors
// already open (a held descriptor follows its folder wherever it is moved, so a swapped
// parent cannot lead outside).
int open_by_walk(int root, const fs::path& rel, int* err) {
  std::vector<Fd> stack;  // the folders below root, innermost last
  auto here = [&] { return stack.empty() ? root : stack.back().fd; };
  std::vector<std::string> parts;
  for (const auto& c : rel) parts.push_back(c.string());
  if (parts.empty()) {
    *err = EISDIR;
    return -1;
  }
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string& c = parts[i];
    if (c == "." || c.empty()) continue;
    if (c == "..") {
      if (stack.empty()) {
        *err = EXDEV;
        return -1;
      }
      stack.pop_back();
      continue;
    }
    if (c == "/") {
      *err = EXDEV;
      return -1;
    }
    const int fd = ::openat(here(), c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      *err = errno;
      struct stat st {};
      // O_NOFOLLOW | O_DIRECTORY on a symlink may say ENOTDIR rather than ELOOP.
      if (*err == ENOTDIR && ::fstatat(here(), c.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        *err = ELOOP;
      return -1;
    }
    stack.emplace_back(fd);
  }
  const std::string& last = parts.back();
  if (last == ".." || last == "." || last.empty() || last == "/") {
    *err = last == ".." && stack.empty() ? EXDEV : EISDIR;
    return -1;
  }
  const int fd = ::openat(here(), last.c_str(), kFileFlags | O_NOFOLLOW);
  if (fd < 0) *err = errno;
  return fd;
}

std::atomic<bool> g_no_openat2{false};  // learnt once: this system answers openat2 with ENOSYS

}  // namespace

fs::path relative_beneath(const fs::path& root, const fs::path& asked, const fs::path& base, bool* outside) {
  *outside = false;
  fs::path r = fs::absolute(root).lexically_normal();
  if (!r.has_filename() && r != r.root_path()) r = r.parent_path();  // "/data/" -> "/data"
  std::vector<fs::path> roots = {r};
  std::error_code ec;
  if (fs::path c = fs::canonical(root, ec); !ec && c != r) roots.push_back(c);  // the operator's spelling or the real one
  fs::path full;
  if (asked.is_absolute()) full = asked;
  else full = (base.empty() ? r : fs::absolute(base)) / asked;
  full = full.lexically_normal();
  for (const fs::path& rt : roots) {
    fs::path rel = full.lexically_relative(rt);
    if (rel.empty()) continue;  // different roots
    auto first = rel.begin();
    if (first != rel.end() && first->string() == "..") continue;
    return rel;  // "." (the folder itself) is refused later as not a regular file
  }
  *outside = true;
  return {};
}

BeneathRead read_beneath(const fs::path& root, const fs::path& rel, std::size_t max_bytes, BeneathMethod method) {
  Fd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd < 0) return status_of(BeneathStatus::no_root, errno);
  if (rel.empty() || rel.is_absolute()) return status_of(BeneathStatus::outside);
  int err = 0;
  int fd = -2;
  if (method == BeneathMethod::automatic && !g_no_openat2.load(std::memory_order_relaxed)) {
    fd = open_with_openat2(dir.fd, rel, &err);
    if (fd == -2) g_no_openat2.store(true, std::memory_order_relaxed);
  }
  if (fd == -2) fd = open_by_walk(dir.fd, rel, &err);
  if (fd < 0) return err == EISDIR ? status_of(BeneathStatus::not_regular) : open_error(err);
  Fd file(fd);
  // Type and size from the descriptor that is read: nothing is looked up by name again.
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return status_of(BeneathStatus::unreadable, errno);
  if (!S_ISREG(st.st_mode)) return status_of(BeneathStatus::not_regular);
  BeneathRead out;
  out.size = static_cast<std::size_t>(st.st_size);
  if (out.size > max_bytes) {
    out.status = BeneathStatus::too_large;
    return out;
  }
  // Read to the end, but never past max_bytes + 1: a file that grows is still bounded.
  out.bytes.resize(out.size + 1);
  std::size_t got = 0;
  for (;;) {
    if (got == out.bytes.size()) {
      if (got > max_bytes) break;
      out.bytes.resize(std::min(max_bytes + 1, got * 2 + 4096));
    }
    const ssize_t n = ::read(file.fd, out.bytes.data() + got, out.bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return status_of(BeneathStatus::unreadable, errno);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > max_bytes) {
    out.status = BeneathStatus::too_large;
    out.size = got;
    out.bytes.clear();
    return out;
  }
  out.bytes.resize(got);
  out.size = got;
  return out;
}

std::string describe(const BeneathRead& r, const std::string& shown, const std::string& what) {
  const std::string q = "'" + shown + "'";
  switch (r.status) {
    case BeneathStatus::ok: return q + ": ok";
    case BeneathStatus::outside:
      return q + " is outside " + what + " (absolute paths elsewhere, '..' out of it and symlinks are refused)";
    case BeneathStatus::missing: return q + ": no such file";
    case BeneathStatus::not_regular: return q + " is not a regular file";
    case BeneathStatus::too_large: return q + " is " + std::to_string(r.size) + " bytes";
    case BeneathStatus::unreadable: return q + ": cannot read: " + r.detail;
    case BeneathStatus::no_root: return what + " cannot be opened: " + r.detail;
  }
  return q;
}

}  // namespace ringlm::io
