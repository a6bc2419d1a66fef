// Reading a file that must lie beneath a folder, race-free: the name is resolved by the
// kernel against an open descriptor of the folder with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS), and the bytes, type and size come from that same descriptor (fstat,
// read). Checking a canonical() path and then opening it by name again leaves a window in
// which a folder inside can be swapped for a symlink to the outside; here no name is looked
// at twice. Where openat2 is missing (ENOSYS: kernels before 5.6, some seccomp filters) the
// same rule is kept by a walk that opens one component at a time with O_NOFOLLOW and
// answers ".." from the descriptors it already holds, never by looking ".." up.
//
// Symlinks are refused anywhere below the folder (even ones that point inside it); the
// folder itself may be reached through symlinks, since its name comes from the operator.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace ringlm::io {

enum class BeneathStatus {
  ok,
  outside,      // absolute and not under the folder, "..", or a symlink on the way
  missing,      // no such file (or a component is not a folder)
  not_regular,  // a folder, device, FIFO, socket
  too_large,    // over max_bytes
  unreadable,   // permission or I/O error (detail says which)
  no_root,      // the folder itself cannot be opened
};

struct BeneathRead {
  BeneathStatus status = BeneathStatus::ok;
  std::string bytes;   // the file's content when ok
  std::size_t size = 0;  // its size when known (too_large: the size found)
  std::string detail;  // strerror text or similar, for messages
};

enum class BeneathMethod { automatic, walk_only };  // walk_only: the fallback, for tests

// The path `asked` spelled relative to `root`, lexically ("." and ".." folded, the root
// matched component by component), or "" (with *outside set) when it leaves the folder. An
// absolute `asked` must start with `root` as spelled (both are made absolute first); a
// relative one is taken against `base` when given, else against `root`.
std::filesystem::path relative_beneath(const std::filesystem::path& root, const std::filesystem::path& asked,
                                       const std::filesystem::path& base, bool* outside);

// Reads `rel` (relative, no "..": relative_beneath's result) beneath `root`, at most
// `max_bytes`. Never throws for the file's sake; the status says what went wrong.
BeneathRead read_beneath(const std::filesystem::path& root, const std::filesystem::path& rel, std::size_t max_bytes,
                         BeneathMethod method = BeneathMethod::automatic);

// One line for a failed read: "'<shown>' is outside <what>" and so on.
std::string describe(const BeneathRead& r, const std::string& shown, const std::string& what);

}  // namespace ringlm::io
