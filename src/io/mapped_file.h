// Read-only memory mapping of a whole file. The mapping is the only copy: tensors and
// tables are views into it, so pages become resident only when they are touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace ringlm::io {

class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path` read-only. Throws ringlm::Error naming the file if it cannot be opened or mapped.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Bytes [offset, offset + length) of the file; throws ringlm::Error naming the file and
  // the range if it does not lie inside the file (overflow-safe).
  std::span<const std::uint8_t> range(std::uint64_t offset, std::uint64_t length) const;

  // Hint that the whole file will be read soon (e.g. while converting weights).
  void advise_sequential() const;
  // Hint that reads are scattered rows (a gather table): no readahead around a row. (The
  // kernel's fault-around still maps up to 64 KB of already cached neighbours per fault, so
  // the resident set grows faster than the rows used: see drop_pages.)
  void advise_random() const;

  // If [p, p + n) lies inside this mapping, unmaps its resident pages (the pages that hold
  // any of those bytes; the page cache keeps the data and the next read maps it again, at
  // the cost of a minor fault) and returns true; otherwise does nothing and returns false.
  // For gather tables, whose mapped rows would otherwise pile up in the resident set as
  // new tokens are seen (~350 KB per generated token on E2B).
  bool drop_pages(const void* p, std::size_t n) const;

 private:
  void reset() noexcept;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
};

}  // namespace ringlm::io
