#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace ringlm::io {

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path.string()) {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_io(path_, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail_io(path_, ": cannot stat: ", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail_io(path_, ": not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      fail_io(path_, ": cannot map ", size_, " bytes: ", std::strerror(err));
    }
    data_ = static_cast<const std::uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
}

MappedFile::~MappedFile() { reset(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void MappedFile::reset() noexcept {
  if (data_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

std::span<const std::uint8_t> MappedFile::range(std::uint64_t offset, std::uint64_t length) const {
  if (offset > size_ || length > size_ - offset)
    fail_model_file(path_, ": byte range [", offset, ", ", offset, "+", length, ") runs past the end of the file (",
         size_, " bytes)");
  return {data_ + offset, static_cast<std::size_t>(length)};
}

void MappedFile::advise_sequential() const {
  if (!data_) return;
  // Advice values are not flags: two calls.
  ::madvise(const_cast<std::uint8_t*>(data_), size_, MADV_SEQUENTIAL);
  ::madvise(const_cast<std::uint8_t*>(data_), size_, MADV_WILLNEED);
}

void MappedFile::advise_random() const {
  if (data_) ::madvise(const_cast<std::uint8_t*>(data_), size_, MADV_RANDOM);
}

bool MappedFile::drop_pages(const void* p, std::size_t n) const {
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const auto base = reinterpret_cast<std::uintptr_t>(data_);
  if (!data_ || n == 0 || begin < base || begin - base > size_ || n > size_ - (begin - base)) return false;
  // Whole pages covering the range, clipped to the mapping (which starts on a page).
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t first = begin & ~(page - 1);
  const std::uintptr_t last = std::min(begin + n, base + size_);
  // MADV_DONTNEED on a read-only file mapping only unmaps: nothing is lost, a later read
  // faults the page back in from the page cache (or the file).
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  return true;
}

}  // namespace ringlm::io
