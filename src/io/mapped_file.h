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
  // Hint that reads are scattered rows (a gather table): the kernel then maps just the
  // faulting page instead of also mapping its neighbours (fault-around / readahead), so the
  // resident set grows by the rows actually used.
  void advise_random() const;

 private:
  void reset() noexcept;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
};

}  // namespace ringlm::io
