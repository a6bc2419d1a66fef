#include "model/q4_weights.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "kernels/dequant_ggml.h"
#include "kernels/q4_formats.h"
#include "kernels/q4_lattice.h"
#include "kernels/iq4xs_packed.h"
#include "kernels/q3k_packed.h"
#include "kernels/q4k_packed.h"
#include "kernels/q5k_packed.h"
#include "kernels/q6k_packed.h"
#include "kernels/q8p16_packed.h"
#include "kernels/thread_pool.h"
#include "model/tensor_manifest.h"

#include "util/progress.h"

namespace ringlm::model {

namespace {

std::size_t stored_bytes(const kernels::WeightMatrix& w) {
  if (w.dtype != io::DType::F32 && w.dtype != io::DType::F16 && w.dtype != io::DType::BF16)
    return static_cast<std::size_t>(w.rows) * static_cast<std::size_t>(kernels::row_bytes(w.dtype, w.cols));
  const std::size_t esize = w.dtype == io::DType::F32 ? 4 : 2;
  return static_cast<std::size_t>(w.rows) * static_cast<std::size_t>(w.cols) * esize;
}

// The stored matrix was read once to quantize it; ask the kernel to reclaim those pages so
// they stop counting in the resident set (file-backed pages are simply dropped and would
// be re-read on access; MADV_PAGEOUT never discards contents, so it is safe on any memory).
void release_pages(const std::uint8_t* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_PAGEOUT)
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<std::uintptr_t>(data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) / page * page;
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT);
#else
  (void)data;
  (void)bytes;
#endif
}

bool quantizable(const kernels::WeightMatrix& w) {
  // Float (and int8-row) matrices only: a ggml block type is never re-quantized to q4_0.
  return w.rows > 0 && w.cols > 0 && w.cols % static_cast<std::int64_t>(kernels::kQBlock) == 0 &&
         kernels::block_format(w.dtype).block_elems == 1;
}

// GGUF block types with no kernel of their own (kernels/dequant_ggml_more.cpp). Q3_K and IQ4_XS
// are not among them: repack_gguf_blocks gives them layouts and kernels of their own.
bool slow_block_type(io::DType t) {
  return t == io::DType::Q5_0 || t == io::DType::Q5_1 || t == io::DType::Q2_K ||
         t == io::DType::IQ4_NL || t == io::DType::IQ2_XXS || t == io::DType::IQ2_XS ||
         t == io::DType::IQ2_S || t == io::DType::IQ3_XXS || t == io::DType::IQ3_S || t == io::DType::IQ1_S ||
         t == io::DType::IQ1_M;
}

void quantize_one(kernels::WeightMatrix& w, std::vector<kernels::Q4PackedBuffer>& owned, QuantizedWeightsInfo& info) {
  if (!quantizable(w)) {
    if (w.rows > 0) ++info.skipped;
    return;
  }
  const std::size_t rows = static_cast<std::size_t>(w.rows), cols = static_cast<std::size_t>(w.cols);
  kernels::Q4PackedBuffer buf(rows, cols);
  std::uint8_t* dst = buf.data();
  const kernels::WeightMatrix src = w;
  std::vector<float> factors(rows, 1.0f);
  std::vector<kernels::Q4LatticeStats> part(kernels::default_thread_pool().size() + 1);
  kernels::default_thread_pool().parallel_for(rows, [&](std::size_t r0, std::size_t r1, std::size_t p) {
    std::vector<float> row(cols);
    std::vector<kernels::BlockQ4_0> blocks(cols / kernels::kQBlock);
    for (std::size_t r = r0; r < r1; ++r) {
      kernels::load_row_f32(src, static_cast<std::int64_t>(r), row.data());
      factors[r] = kernels::quantize_row_q4_0_lattice(row.data(), src.dtype, blocks.data(), cols, true, &part[p]);
      kernels::q4_pack_row(blocks.data(), r, rows, cols, dst);
    }
  });
  for (const auto& s : part) info.q4.add(s);
  release_pages(src.data, stored_bytes(src));
  w.dtype = io::DType::Q4_0;
  w.packed = true;
  w.data = buf.view().data;
  w.row_scales = nullptr;
  info.bytes += buf.view().bytes();
  ++info.matrices;
  owned.push_back(std::move(buf));
  if (std::any_of(factors.begin(), factors.end(), [](float f) { return f != 1.0f; })) {
    // Only rows of lattice blocks fp16 cannot hold need factors (q4_lattice.h); 4 bytes a row.
    auto fb = kernels::Q4PackedBuffer::raw(rows * sizeof(float));
    std::memcpy(fb.data(), factors.data(), rows * sizeof(float));
    w.row_scales = reinterpret_cast<const float*>(fb.data());
    info.bytes += rows * sizeof(float);
    owned.push_back(std::move(fb));
  }
}

bool plain_q4_0(const kernels::WeightMatrix& w) {
  return w.dtype == io::DType::Q4_0 && !w.packed && w.rows > 0 && w.cols > 0 &&
         w.cols % static_cast<std::int64_t>(kernels::kQBlock) == 0;
}

void repack_one(kernels::WeightMatrix& w, std::vector<kernels::Q4PackedBuffer>& owned, QuantizedWeightsInfo& info) {
  if (!plain_q4_0(w)) return;
  const std::size_t rows = static_cast<std::size_t>(w.rows), cols = static_cast<std::size_t>(w.cols);
  const std::size_t nb = cols / kernels::kQBlock;
  kernels::Q4PackedBuffer buf(rows, cols);
  std::uint8_t* dst = buf.data();
  const auto* src = reinterpret_cast<const kernels::BlockQ4_0*>(w.data);
  const std::size_t groups = buf.view().groups();
  // Whole 16-row groups per participant, so no two threads write the same cache line.
  kernels::default_thread_pool().parallel_for(groups, [&](std::size_t g0, std::size_t g1, std::size_t) {
    for (std::size_t r = g0 * kernels::kQ4GroupRows; r < std::min(rows, g1 * kernels::kQ4GroupRows); ++r)
      kernels::q4_pack_row(src + r * nb, r, rows, cols, dst);
  });
  release_pages(w.data, stored_bytes(w));
  w.packed = true;
  w.data = buf.view().data;
  info.bytes += buf.view().bytes();
  ++info.matrices;
  owned.push_back(std::move(buf));
}

// Q4_K -> q4kp16, Q6_K -> q6kp16, Q8_0 -> q8p16 (kernels/q4k_packed.h, q6k_packed.h,
// q8p16_packed.h): the same kind of regrouping in 16-row groups.
template <typename Block, std::size_t (*Bytes)(std::size_t, std::size_t),
          void (*PackRow)(const Block*, std::size_t, std::size_t, std::size_t, std::uint8_t*), std::size_t kElems>
void repack_one_k(io::DType type, kernels::WeightMatrix& w, std::vector<kernels::Q4PackedBuffer>& owned,
                  QuantizedWeightsInfo& info) {
  if (w.dtype != type || w.packed || w.rows <= 0 || w.cols <= 0 || w.cols % kElems != 0) return;
  const std::size_t rows = static_cast<std::size_t>(w.rows), cols = static_cast<std::size_t>(w.cols);
  const std::size_t bytes = Bytes(rows, cols);
  auto buf = kernels::Q4PackedBuffer::raw(bytes);
  std::uint8_t* dst = buf.data();
  const auto* src = reinterpret_cast<const Block*>(w.data);
  const std::size_t nsb = cols / kElems, group = 16;
  const std::size_t groups = (rows + group - 1) / group;
  kernels::default_thread_pool().parallel_for(groups, [&](std::size_t g0, std::size_t g1, std::size_t) {
    for (std::size_t r = g0 * group; r < std::min(rows, g1 * group); ++r) PackRow(src + r * nsb, r, rows, cols, dst);
  });
  release_pages(w.data, stored_bytes(w));
  w.packed = true;
  w.data = dst;
  info.bytes += bytes;
  ++info.matrices;
  owned.push_back(std::move(buf));
}

// One such matrix -> plain Q8_0 blocks (decoded, then ggml's q8_0 rounding) in an owned
// buffer; repack_one_k then regroups it for the int8-activation kernels.
void to_q8_0(kernels::WeightMatrix& w, std::vector<kernels::Q4PackedBuffer>& owned) {
  const std::size_t rows = static_cast<std::size_t>(w.rows), cols = static_cast<std::size_t>(w.cols);
  const std::size_t row_out = static_cast<std::size_t>(kernels::row_bytes(io::DType::Q8_0, w.cols));
  auto buf = kernels::Q4PackedBuffer::raw(rows * row_out);
  std::uint8_t* dst = buf.data();
  const kernels::WeightMatrix src = w;
  kernels::default_thread_pool().parallel_for(rows, [&](std::size_t r0, std::size_t r1, std::size_t) {
    std::vector<float> row(cols);
    for (std::size_t r = r0; r < r1; ++r) {
      kernels::load_row_f32(src, static_cast<std::int64_t>(r), row.data());
      kernels::quantize_row(io::DType::Q8_0, row.data(), dst + r * row_out, w.cols);
    }
  });
  release_pages(src.data, stored_bytes(src));
  w.dtype = io::DType::Q8_0;
  w.data = dst;
  owned.push_back(std::move(buf));
}

// The linear layers (model/tensor_manifest.h): embed_tokens keeps its stored rows; the LM
// head, when tied, is a copy of its WeightMatrix and gets its own quantized data.
MatrixVisitor linear_of(ModelWeights& weights) {
  return [&weights](const std::function<void(kernels::WeightMatrix&)>& fn) {
    for_each_matrix(weights, MatrixSet::linear, fn);
  };
}

}  // namespace

std::vector<kernels::Q4PackedBuffer> repack_gguf_blocks(ModelWeights& weights, QuantizedWeightsInfo* info_out,
                                                        RepackTypes types) {
  return repack_gguf_blocks(linear_of(weights), info_out, types);
}

std::vector<kernels::Q4PackedBuffer> repack_gguf_blocks(const MatrixVisitor& each, QuantizedWeightsInfo* info_out,
                                                        RepackTypes types) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<kernels::Q4PackedBuffer> owned;
  QuantizedWeightsInfo info;
  std::uint64_t n = 0;
  each([&](kernels::WeightMatrix& w) { n += w.dtype != io::DType::F32 && !w.packed; });
  ProgressStage progress("repacking GGUF blocks", n, "matrices");
  each([&](kernels::WeightMatrix& w) {
    progress.add(w.dtype != io::DType::F32 && !w.packed);
    repack_one(w, owned, info);
    if (types == RepackTypes::q4_0_only) return;
    repack_one_k<kernels::BlockQ4_K, kernels::q4k_packed_bytes, kernels::q4k_pack_row, 256>(io::DType::Q4_K, w, owned,
                                                                                          info);
    repack_one_k<kernels::BlockQ6_K, kernels::q6k_packed_bytes, kernels::q6k_pack_row, 256>(io::DType::Q6_K, w, owned,
                                                                                          info);
    repack_one_k<kernels::BlockQ8_0, kernels::q8p16_packed_bytes, kernels::q8p16_pack_row, 32>(io::DType::Q8_0, w,
                                                                                             owned, info);
    repack_one_k<kernels::BlockIQ4_XS, kernels::iq4xs_packed_bytes, kernels::iq4xs_pack_row, 256>(io::DType::IQ4_XS, w,
                                                                                                owned, info);
    repack_one_k<kernels::BlockQ3_K, kernels::q3k_packed_bytes, kernels::q3k_pack_row, 256>(io::DType::Q3_K, w, owned,
                                                                                          info);
    repack_one_k<kernels::BlockQ5_K, kernels::q5k_packed_bytes, kernels::q5k_pack_row, 256>(io::DType::Q5_K, w, owned,
                                                                                          info);
  });
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (info_out) *info_out = info;
  return owned;
}

std::vector<kernels::Q4PackedBuffer> convert_slow_gguf_blocks(ModelWeights& weights, SlowBlocksInfo* info_out) {
  return convert_slow_gguf_blocks(linear_of(weights), info_out);
}

std::vector<kernels::Q4PackedBuffer> convert_slow_gguf_blocks(const MatrixVisitor& each, SlowBlocksInfo* info_out) {
  std::vector<kernels::Q4PackedBuffer> owned;
  SlowBlocksInfo info;
  QuantizedWeightsInfo packed;
  each([&](kernels::WeightMatrix& w) {
    if (!slow_block_type(w.dtype) || w.cols % static_cast<std::int64_t>(kernels::kQBlock) != 0) return;
    const std::string name = io::dtype_name(w.dtype);
    if (info.types.find(name) == std::string::npos) info.types += (info.types.empty() ? "" : ", ") + name;
    info.file_bytes += stored_bytes(w);
    to_q8_0(w, owned);
    repack_one_k<kernels::BlockQ8_0, kernels::q8p16_packed_bytes, kernels::q8p16_pack_row, 32>(io::DType::Q8_0, w,
                                                                                             owned, packed);
    ++info.matrices;
  });
  info.memory_bytes = packed.bytes;
  if (info_out) *info_out = info;
  return owned;
}

std::vector<kernels::Q4PackedBuffer> copy_packed_to_memory(
    ModelWeights& weights, const std::function<void(const void*, std::size_t)>& drop, QuantizedWeightsInfo* info_out) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<kernels::Q4PackedBuffer> owned;
  std::vector<std::pair<const std::uint8_t*, const std::uint8_t*>> copied;  // file data -> copy
  QuantizedWeightsInfo info;
  for_each_matrix(weights, MatrixSet::all, [&](kernels::WeightMatrix& w) {
    if (w.dtype != io::DType::Q4_0 || !w.packed || w.rows <= 0 || w.float_path) return;
    for (const auto& [from, to] : copied)
      if (from == w.data) {
        w.data = to;
        return;
      }
    kernels::Q4PackedBuffer buf(static_cast<std::size_t>(w.rows), static_cast<std::size_t>(w.cols));
    const std::size_t bytes = buf.view().bytes(), groups = buf.view().groups();
    const std::size_t group_bytes = kernels::Q4Packed::group_bytes(static_cast<std::size_t>(w.cols));
    std::uint8_t* dst = buf.data();
    const std::uint8_t* src = w.data;
    // Whole groups per participant: both the page faults of the copy and of the file's
    // pages are split over the threads.
    kernels::default_thread_pool().parallel_for(groups, [&](std::size_t g0, std::size_t g1, std::size_t) {
      std::memcpy(dst + g0 * group_bytes, src + g0 * group_bytes, (g1 - g0) * group_bytes);
    });
    drop(src, bytes);
    copied.emplace_back(src, dst);
    w.data = dst;
    info.bytes += bytes;
    ++info.matrices;
    owned.push_back(std::move(buf));
  });
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (info_out) *info_out = info;
  return owned;
}

std::vector<kernels::Q4PackedBuffer> quantize_weights_q4_0(ModelWeights& weights, QuantizedWeightsInfo* info_out) {
  return quantize_weights_q4_0(linear_of(weights), info_out);
}

std::vector<kernels::Q4PackedBuffer> quantize_weights_q4_0(const MatrixVisitor& each, QuantizedWeightsInfo* info_out) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<kernels::Q4PackedBuffer> owned;
  QuantizedWeightsInfo info;
  std::uint64_t n = 0;
  each([&](kernels::WeightMatrix&) { ++n; });
  ProgressStage progress("quantizing weights to q4_0", n, "matrices");
  each([&](kernels::WeightMatrix& w) {
    progress.add(1);
    if (plain_q4_0(w))
      repack_one(w, owned, info);  // already q4_0: regroup, do not re-quantize
    else
      quantize_one(w, owned, info);
  });
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (info_out) *info_out = info;
  return owned;
}

}  // namespace ringlm::model
