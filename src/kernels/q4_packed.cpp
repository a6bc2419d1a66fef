#include "kernels/q4_packed.h"

#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "util/error.h"

namespace ringlm::kernels {

namespace {
void check_shape(std::size_t rows, std::size_t cols) {
  if (rows == 0 || cols == 0 || cols % kQBlock != 0)
    fail("q4_0 pack: shape [", rows, ", ", cols, "] needs rows > 0 and cols a positive multiple of 32");
}
}  // namespace

std::size_t q4_packed_bytes(std::size_t rows, std::size_t cols) {
  check_shape(rows, cols);
  return Q4Packed{nullptr, rows, cols}.bytes();
}

void q4_pack(const BlockQ4_0* src, std::size_t rows, std::size_t cols, std::uint8_t* dst) {
  check_shape(rows, cols);
  const Q4Packed w{dst, rows, cols};
  const std::size_t nb = w.blocks_per_row();
  std::memset(dst, 0, w.bytes());
  for (std::size_t g = 0; g < w.groups(); ++g) {
    std::uint8_t* codes = dst + g * Q4Packed::group_bytes(cols);
    std::uint8_t* scales = codes + nb * 256;
    for (std::size_t r = 0; r < kQ4GroupRows; ++r) {
      const std::size_t row = g * kQ4GroupRows + r;
      if (row >= rows) break;
      for (std::size_t b = 0; b < nb; ++b) {
        const BlockQ4_0& blk = src[row * nb + b];
        for (std::size_t t = 0; t < 4; ++t) std::memcpy(codes + b * 256 + t * 64 + r * 4, blk.qs + 4 * t, 4);
        std::memcpy(scales + (b * kQ4GroupRows + r) * 2, &blk.d, 2);
      }
    }
  }
}

void q4_pack_row(const BlockQ4_0* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst) {
  check_shape(rows, cols);
  if (row >= rows) fail("q4_0 pack: row ", row, " out of range (rows ", rows, ")");
  const Q4Packed w{dst, rows, cols};
  const std::size_t g = row / kQ4GroupRows, r = row % kQ4GroupRows;
  std::uint8_t* codes = dst + g * Q4Packed::group_bytes(cols);
  std::uint8_t* scales = codes + w.blocks_per_row() * 256;
  for (std::size_t b = 0; b < w.blocks_per_row(); ++b) {
    for (std::size_t t = 0; t < 4; ++t) std::memcpy(codes + b * 256 + t * 64 + r * 4, blocks[b].qs + 4 * t, 4);
    std::memcpy(scales + (b * kQ4GroupRows + r) * 2, &blocks[b].d, 2);
  }
}

void q4_quantize_pack(const float* src, std::size_t rows, std::size_t cols, std::uint8_t* dst) {
  check_shape(rows, cols);
  std::vector<BlockQ4_0> blocks(rows * (cols / kQBlock));
  for (std::size_t r = 0; r < rows; ++r)
    quantize_row_q4_0_fast(src + r * cols, blocks.data() + r * (cols / kQBlock), cols);
  q4_pack(blocks.data(), rows, cols, dst);
}

void q4_unpack_row(const Q4Packed& w, std::size_t row, BlockQ4_0* out) {
  if (row >= w.rows) fail("q4_0 unpack: row ", row, " out of range (rows ", w.rows, ")");
  const std::size_t g = row / kQ4GroupRows, r = row % kQ4GroupRows;
  const std::uint8_t* codes = w.group_codes(g);
  const std::uint16_t* scales = w.group_scales(g);
  for (std::size_t b = 0; b < w.blocks_per_row(); ++b) {
    for (std::size_t t = 0; t < 4; ++t) std::memcpy(out[b].qs + 4 * t, codes + b * 256 + t * 64 + r * 4, 4);
    std::memcpy(&out[b].d, scales + b * kQ4GroupRows + r, 2);
  }
}

Q4PackedBuffer::Q4PackedBuffer(std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols) {
  allocate(q4_packed_bytes(rows, cols));
}

Q4PackedBuffer Q4PackedBuffer::raw(std::size_t bytes) {
  Q4PackedBuffer b;
  b.allocate(bytes);
  return b;
}

void Q4PackedBuffer::allocate(std::size_t bytes) {
  bytes_ = bytes;
  if (bytes == 0) return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  if (bytes >= kHuge) {
    // Over-map by one huge page so the data can start on a 2 MiB boundary; the advice is
    // given before the first touch, so the kernel can fault whole huge pages in.
    const std::size_t len = (bytes + kHuge - 1) / kHuge * kHuge + kHuge;
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      const auto base = reinterpret_cast<std::uintptr_t>(p);
      const std::uintptr_t aligned = (base + kHuge - 1) & ~(kHuge - 1);
      (void)::madvise(reinterpret_cast<void*>(aligned), len - (aligned - base), MADV_HUGEPAGE);
      mapped_ = p;
      mapped_bytes_ = len;
      data_ = reinterpret_cast<std::uint8_t*>(aligned);
      return;  // anonymous pages are zero
    }
  }
#endif
  data_ = static_cast<std::uint8_t*>(::operator new((bytes + 63) / 64 * 64, std::align_val_t{64}));
  std::memset(data_, 0, (bytes + 63) / 64 * 64);
}

Q4PackedBuffer::~Q4PackedBuffer() {
#if defined(__linux__)
  if (mapped_) {
    ::munmap(mapped_, mapped_bytes_);
    return;
  }
#endif
  if (data_) ::operator delete(data_, std::align_val_t{64});
}

void Q4PackedBuffer::swap(Q4PackedBuffer& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(bytes_, o.bytes_);
  std::swap(mapped_, o.mapped_);
  std::swap(mapped_bytes_, o.mapped_bytes_);
  std::swap(rows_, o.rows_);
  std::swap(cols_, o.cols_);
}

}  // namespace ringlm::kernels
