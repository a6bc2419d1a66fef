// Test helper for tests/gguf/dequant_numpy_test.py.
//   gguf_testgen quantize OUT.gguf SEED : random floats (with outlier blocks and extreme
//       magnitudes) quantized to every supported type by ringlm's quantizers. Writes, per
//       type T, "src.T" (F32 input), "q.T" (the blocks) and "deq.T" (F32, ringlm's dequant).
//   gguf_testgen dequant IN.gguf OUT.gguf : reads IN with ringlm's GGUF reader and writes
//       every tensor dequantized to F32 under the same name.
// The Python test decodes the blocks independently in float64 and compares.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "io/gguf_reader.h"
#include "io/gguf_writer.h"
#include "kernels/dequant_ggml.h"
#include "util/error.h"

using namespace ringlm;

namespace {

std::span<const std::uint8_t> as_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * 4};
}

void quantize_file(const std::string& out, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::int64_t rows = 6, cols = 512;  // 2 super-blocks / 16 blocks per row
  // Per-row magnitude, from tiny (scales in fp16 subnormals) to large (with the outliers,
  // Q4_0/Q4_1 scales near the fp16 maximum).
  const float magnitudes[rows] = {1e-6f, 0.02f, 1.0f, 30.0f, 400.0f, 3000.0f};
  std::vector<float> src(rows * cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      float v = normal(rng) * magnitudes[r];
      if (c % 97 == 5) v *= 40.0f;               // outliers inside blocks
      if (r == 2 && c >= 64 && c < 96) v = 0.0f;  // an all-zero block
      if (r == 2 && c >= 256 && c < 288) v = std::abs(v) + 3.0f;  // an all-positive block
      src[r * cols + c] = v;
    }
  io::GgufWriter w;
  w.add_string("general.architecture", "ringlm-test");
  const io::DType types[] = {io::DType::F32, io::DType::F16, io::DType::BF16, io::DType::Q8_0,
                             io::DType::Q4_0, io::DType::Q4_1, io::DType::Q4_K, io::DType::Q5_K,
                             io::DType::Q6_K};
  for (auto t : types) {
    const std::string name = io::dtype_name(t);
    std::vector<float> in = src;
    // F16 values and the Q4_1 block minimum are fp16: keep those inputs inside its range.
    if (t == io::DType::F16 || t == io::DType::Q4_1)
      for (auto& v : in) v = std::max(-60000.0f, std::min(60000.0f, v));
    std::vector<std::uint8_t> blocks(static_cast<std::size_t>(kernels::row_bytes(t, cols) * rows));
    std::vector<float> deq(in.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      std::uint8_t* row = blocks.data() + r * kernels::row_bytes(t, cols);
      kernels::quantize_row(t, in.data() + r * cols, row, cols);
      kernels::dequantize_row(t, row, deq.data() + r * cols, cols);
    }
    w.add_tensor("src." + name, 0, {cols, rows}, as_bytes(in));
    w.add_tensor("q." + name, io::ggml_type_of(t), {cols, rows}, blocks);
    w.add_tensor("deq." + name, 0, {cols, rows}, as_bytes(deq));
  }
  w.write(out);
}

void dequant_file(const std::string& in, const std::string& out) {
  const io::GgufFile f(in);
  io::GgufWriter w;
  for (const auto& t : f.tensors()) {
    if (!t.type_info().dtype) fail(in, ": tensor '", t.name, "' has unsupported type ", t.type_info().name);
    std::vector<float> deq(static_cast<std::size_t>(t.numel()));
    kernels::dequantize_row(*t.type_info().dtype, t.data, deq.data(), t.numel());
    w.add_tensor(t.name, 0, t.ne, as_bytes(deq));
  }
  w.write(out);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "quantize" && argc == 4) {
      quantize_file(argv[2], static_cast<unsigned>(std::stoul(argv[3])));
    } else if (mode == "dequant" && argc == 4) {
      dequant_file(argv[2], argv[3]);
    } else {
      std::fprintf(stderr, "usage: gguf_testgen quantize OUT.gguf SEED | dequant IN.gguf OUT.gguf\n");
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gguf_testgen: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
