// The in-memory q4_0 weight layout the kernels read ("q4p16"): a weight matrix W [rows, cols]
// (PyTorch order: rows = output features, cols = input features, cols % 32 == 0) is cut into
// groups of 16 consecutive rows (the last group zero-padded). Group g is one contiguous
// stretch of group_bytes(cols) bytes:
//
//   codes  [nb][4][16][4] bytes   nb = cols/32 blocks; for block b, step t (0..3), row r of
//                                 the group: bytes qs[4t .. 4t+3] of row r's ggml block b.
//                                 So one 64-byte line = 16 rows x 4 bytes, and after masking
//                                 the low (high) nibbles, 32-bit lane r holds elements
//                                 4t..4t+3 (16+4t..16+4t+3) of row r: one VNNI dot step for
//                                 16 rows at once, with the activation bytes broadcast.
//   scales [nb][16] fp16          the 16 rows' scales of block b.
//
// Why: a GEMV streams each group front to back (two sequential streams per thread), every
// SIMD lane owns one output row so no horizontal reductions are needed, and the codes are
// exactly ggml's bytes regrouped 4 at a time, so packing a GGUF/ggml q4_0 tensor is a copy.
// Padding rows have zero codes and zero scales (they compute to 0 and are never stored).
// Size: 18 bytes per 32 weights, the same as plain q4_0 (plus padding to 16 rows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/q4_formats.h"

namespace ringlm::kernels {

inline constexpr std::size_t kQ4GroupRows = 16;

struct Q4Packed {
  const std::uint8_t* data = nullptr;  // group 0 start; any alignment (64 recommended)
  std::size_t rows = 0;                // real (unpadded) output rows
  std::size_t cols = 0;                // input features, multiple of 32

  std::size_t blocks_per_row() const { return cols / kQBlock; }
  std::size_t groups() const { return (rows + kQ4GroupRows - 1) / kQ4GroupRows; }
  static std::size_t group_bytes(std::size_t cols) { return cols / kQBlock * (256 + 32); }
  std::size_t bytes() const { return groups() * group_bytes(cols); }
  const std::uint8_t* group_codes(std::size_t g) const { return data + g * group_bytes(cols); }
  const std::uint16_t* group_scales(std::size_t g) const {
    return reinterpret_cast<const std::uint16_t*>(group_codes(g) + blocks_per_row() * 256);
  }
};

// Bytes needed to pack a [rows, cols] matrix.
std::size_t q4_packed_bytes(std::size_t rows, std::size_t cols);

// Packs row-major ggml q4_0 blocks src[rows][cols/32] into dst (q4_packed_bytes bytes).
// Throws ringlm::Error if cols is not a positive multiple of 32 or rows is 0.
void q4_pack(const BlockQ4_0* src, std::size_t rows, std::size_t cols, std::uint8_t* dst);

// Writes one row (cols/32 ggml blocks) into a packed matrix being built (dst of
// q4_packed_bytes(rows, cols) bytes, zero-initialised so padding rows stay zero). Rows may
// be written in any order and from several threads (distinct rows touch distinct bytes).
void q4_pack_row(const BlockQ4_0* blocks, std::size_t row, std::size_t rows, std::size_t cols, std::uint8_t* dst);

// Quantizes a float matrix [rows, cols] with quantize_row_q4_0_ref and packs it.
void q4_quantize_pack(const float* src, std::size_t rows, std::size_t cols, std::uint8_t* dst);

// Recovers row `row` as ggml blocks (cols/32 of them): the inverse of q4_pack.
void q4_unpack_row(const Q4Packed& w, std::size_t row, BlockQ4_0* out);

// Owning, zeroed, 64-byte-aligned storage for a packed matrix (for tests, benches and
// load-time conversion or copy). A buffer of 2 MiB or more is its own anonymous mapping,
// 2 MiB aligned and marked for transparent huge pages (Linux): the decode GEMVs stream every
// byte once a token, and on huge pages they read measurably faster than on 4 KiB pages or on
// a file mapping's page-cache pages (BENCHMARKS.md, "packed directory vs GGUF").
class Q4PackedBuffer {
 public:
  Q4PackedBuffer() = default;
  Q4PackedBuffer(std::size_t rows, std::size_t cols);
  Q4PackedBuffer(Q4PackedBuffer&& o) noexcept { swap(o); }
  Q4PackedBuffer& operator=(Q4PackedBuffer&& o) noexcept {
    Q4PackedBuffer t(std::move(o));
    swap(t);
    return *this;
  }
  Q4PackedBuffer(const Q4PackedBuffer&) = delete;
  Q4PackedBuffer& operator=(const Q4PackedBuffer&) = delete;
  ~Q4PackedBuffer();
  // Zeroed storage of `bytes` bytes for a matrix in another packed layout (q4k_packed.h,
  // q6k_packed.h, q8p16_packed.h);
  // view() is then empty, data() is what counts.
  static Q4PackedBuffer raw(std::size_t bytes);
  std::uint8_t* data() { return data_; }
  std::size_t bytes() const { return bytes_; }
  Q4Packed view() const { return {data_, rows_, cols_}; }
  // True when the storage was mapped with the huge-page advice (2 MiB or more, Linux).
  bool huge_page_advised() const { return mapped_ != nullptr; }

 private:
  void allocate(std::size_t bytes);
  void swap(Q4PackedBuffer& o) noexcept;
  std::uint8_t* data_ = nullptr;
  std::size_t bytes_ = 0;
  void* mapped_ = nullptr;  // the mapping to unmap (null: data_ came from operator new)
  std::size_t mapped_bytes_ = 0;
  std::size_t rows_ = 0, cols_ = 0;
};

}  // namespace ringlm::kernels
