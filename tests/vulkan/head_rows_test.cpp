// The row-list matmul (backend::Device::matmul_rows) behind the subset LM head of guided
// decoding: every listed row's value is bit-identical to the same row of the full device
// matmul, for every weight layout, over a matrix split in two parts (row_base), with repeats,
// rows in any order and a count under the list's capacity; entries outside a part and past
// the count are left as they were. Then the model: a device session's subset head
// (Session::head_logits_compact / head_logits_rows) equals its full head at those rows, bit
// for bit, unsplit and split, and computes single rows (granularity 1).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <unistd.h>

#include "device_fixture.h"
#include "kernels/q4_packed.h"
#include "model/device_head.h"
#include "model/model.h"
#include "model/testing/test_checkpoint.h"
#include "util/float16.h"

namespace fs = std::filesystem;
using namespace ringlm;
using namespace ringlm::vulkan::testing;
using backend::Memory;
using backend::WeightLayout;

namespace {

std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

struct Matrix {
  WeightLayout layout;
  std::vector<std::uint8_t> bytes;  // rows laid out as the device reads them
  std::size_t split_row;            // the second part starts here (a whole row group)
  std::size_t split_byte;
};

// A rows x cols matrix in `layout`, with finite scales where the layout has any.
Matrix make(WeightLayout layout, int rows, int cols) {
  Matrix m{layout, {}, 0, 0};
  if (layout == WeightLayout::q4p16) {
    const std::vector<float> wf = randn(static_cast<std::size_t>(rows) * cols, 9);
    m.bytes.resize(kernels::q4_packed_bytes(rows, cols));
    kernels::q4_quantize_pack(wf.data(), rows, cols, m.bytes.data());
    m.split_row = 16;
    m.split_byte = kernels::q4_packed_bytes(16, cols);
    return m;
  }
  if (layout == WeightLayout::f32) {
    const std::vector<float> wf = randn(static_cast<std::size_t>(rows) * cols, 9);
    m.bytes.resize(wf.size() * 4);
    std::memcpy(m.bytes.data(), wf.data(), m.bytes.size());
    m.split_row = 11;
    m.split_byte = 11ull * cols * 4;
    return m;
  }
  // Q8_0: 34-byte blocks of an fp16 scale and 32 int8 codes; rows start at odd offsets.
  const int blocks = rows * cols / 32;
  m.bytes = random_bytes(static_cast<std::size_t>(blocks) * 34, 5);
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> s(0.001f, 0.05f);
  for (int b = 0; b < blocks; ++b) {
    const std::uint16_t h = f32_to_fp16(s(rng) * ((rng() & 1) ? 1.0f : -1.0f));
    std::memcpy(m.bytes.data() + b * 34, &h, 2);
  }
  m.split_row = 11;
  m.split_byte = 11ull * (cols / 32) * 34;  // not a word boundary: the second part is its own buffer
  return m;
}

}  // namespace

TEST(VulkanHeadRows, ListedRowsAreTheFullMatmulsRowsBitForBit) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const int rows = 37, cols = 96;  // a partial last group of 16 (q4p16) and of 8 (ggml) rows
  const std::vector<float> x = randn(cols, 2);
  const std::vector<std::int32_t> list = {36, 0, 5, 5, 17, 16, 15, 31, 2, 36, 20};  // repeats, any order
  const int max_ids = 32, count = static_cast<int>(list.size());
  for (WeightLayout layout : {WeightLayout::f32, WeightLayout::q4p16, WeightLayout::q8_0}) {
    SCOPED_TRACE(backend::weight_layout_name(layout));
    const Matrix m = make(layout, rows, cols);
    const auto whole = upload(*dev, m.bytes);
    const std::vector<std::uint8_t> b0(m.bytes.begin(), m.bytes.begin() + static_cast<std::ptrdiff_t>(m.split_byte));
    std::vector<std::uint8_t> b1(m.bytes.begin() + static_cast<std::ptrdiff_t>(m.split_byte), m.bytes.end());
    b1.resize((b1.size() + 3) / 4 * 4);
    const auto part0 = upload(*dev, b0), part1 = upload(*dev, b1);
    const backend::Weight w{whole, layout, rows, cols};
    const std::int64_t r1 = static_cast<std::int64_t>(m.split_row);
    const backend::Weight w0{part0, layout, r1, cols}, w1{part1, layout, rows - r1, cols};

    std::vector<std::int32_t> ids(1 + max_ids, 0);
    ids[0] = count;
    std::copy(list.begin(), list.end(), ids.begin() + 1);
    const auto in = upload(*dev, x);
    const auto id_buf = upload(*dev, ids, Memory::host);
    const auto full = dev->create_buffer(4ull * rows, Memory::device, "full");
    const auto a = dev->create_buffer(4ull * max_ids, Memory::host, "listed, unsplit");
    const auto b = dev->create_buffer(4ull * max_ids, Memory::host, "listed, split");
    const auto c = dev->create_buffer(4ull * max_ids, Memory::host, "listed, first part only");
    for (auto buf : {a, b, c}) dev->fill_words(buf, 0x7FC00000u);  // NaN: entries not written stay NaN
    dev->begin_step();
    dev->matmul(w, {in, 0}, 1, {full, 0});
    dev->matmul_rows(w, {in, 0}, {id_buf, 0}, max_ids, 0, {a, 0});
    dev->matmul_rows(w0, {in, 0}, {id_buf, 0}, max_ids, 0, {b, 0});
    dev->matmul_rows(w1, {in, 0}, {id_buf, 0}, max_ids, r1, {b, 0});
    dev->matmul_rows(w0, {in, 0}, {id_buf, 0}, max_ids, 0, {c, 0});
    dev->end_step();
    const auto fv = download<float>(*dev, full, rows);
    const auto av = download<float>(*dev, a, max_ids), bv = download<float>(*dev, b, max_ids),
               cv = download<float>(*dev, c, max_ids);
    for (int i = 0; i < max_ids; ++i) {
      if (i >= count) {
        EXPECT_TRUE(std::isnan(av[i]) && std::isnan(bv[i])) << "entry " << i << " past the count was written";
        continue;
      }
      const float want = fv[list[i]];
      ASSERT_FALSE(std::isnan(want));
      EXPECT_EQ(std::memcmp(&av[i], &want, 4), 0) << "entry " << i << " row " << list[i] << ": " << av[i] << " vs " << want;
      EXPECT_EQ(std::memcmp(&bv[i], &want, 4), 0) << "split, entry " << i << " row " << list[i];
      if (list[i] < r1) EXPECT_EQ(std::memcmp(&cv[i], &want, 4), 0) << "first part, entry " << i;
      else EXPECT_TRUE(std::isnan(cv[i])) << "first part wrote row " << list[i] << " of the second";
    }
    for (auto buf : {whole, part0, part1, in, id_buf, full, a, b, c}) dev->destroy_buffer(buf);
  }
}

TEST(VulkanHeadRows, AListOverItsBuffersIsAnErrorNotACrash) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const std::vector<float> wf = randn(16 * 32, 1), x = randn(32, 2);
  const auto wb = upload(*dev, wf), in = upload(*dev, x);
  const auto ids = dev->create_buffer(4 * 8, Memory::host, "ids"), out = dev->create_buffer(4 * 8, Memory::host, "out");
  dev->begin_step();
  EXPECT_THROW(dev->matmul_rows({wb, WeightLayout::f32, 16, 32}, {in, 0}, {ids, 0}, 8, 0, {out, 0}), Error);  // 1 + 8 ids
  EXPECT_THROW(dev->matmul_rows({wb, WeightLayout::f32, 16, 32}, {in, 0}, {ids, 0}, 7, 0, {out, 4}), Error);  // output
  dev->abandon_step();
  for (auto buf : {wb, in, ids, out}) dev->destroy_buffer(buf);
  EXPECT_EQ(model::detail::DeviceHeadRows::bucket(1, 262144), 16);
  EXPECT_EQ(model::detail::DeviceHeadRows::bucket(17, 262144), 32);
  EXPECT_EQ(model::detail::DeviceHeadRows::bucket(300, 256), 256);
}

TEST(VulkanHeadRows, DeviceSubsetHeadEqualsTheFullDeviceHead) {
  RINGLM_VULKAN_DEVICE_OR_SKIP(dev);
  const fs::path dir = fs::temp_directory_path() / ("ringlm_vulkan_head_test_" + std::to_string(::getpid()));
  model::testing::TestCheckpointOptions co;
  co.seed = 42;
  model::testing::write_test_checkpoint(dir, co);
  for (std::uint64_t part_bytes : {std::uint64_t{0}, std::uint64_t{4096}}) {
    SCOPED_TRACE(part_bytes ? "split head" : "whole head");
    model::ModelOptions o;
    o.threads = 2;
    o.weights = model::WeightFormat::q4_0;
    o.activations = kernels::Q4Activations::f32;
    o.device = dev;
    o.device_weight_part_bytes = part_bytes;
    const auto m = model::Model::load(dir, o);
    ASSERT_NE(m->device_head_rows(), nullptr);
    const int V = m->config().vocab_size;
    model::Session s(m);
    EXPECT_EQ(s.head_row_granularity(), 1u);
    const std::vector<std::int32_t> prompt = {2, 10, 11, 12, 13};
    s.prefill(prompt, std::vector<std::int64_t>{0, 1, 2, 3, 4}, model::LogitsMode::Hidden);
    const auto full_span = s.head_logits();
    const std::vector<float> full(full_span.begin(), full_span.end());
    std::vector<std::int32_t> allowed = {V - 1, 0, 5, 17, 17, 99, 200, 3};
    for (int i = 0; i < 40; ++i) allowed.push_back((i * 37 + 11) % V);  // a second list size: another bucket
    for (std::size_t n : {std::size_t{8}, allowed.size()}) {
      const std::span<const std::int32_t> ids(allowed.data(), n);
      std::vector<float> got(n);
      s.head_logits_compact(ids, got);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(std::memcmp(&got[i], &full[ids[i]], 4), 0) << "row " << ids[i] << ": " << got[i] << " vs " << full[ids[i]];
      s.reserve_head_rows(n);
      const auto row = s.head_logits_rows(ids);
      for (int v = 0; v < V; ++v) {
        const bool listed = std::find(ids.begin(), ids.end(), v) != ids.end();
        if (listed) ASSERT_EQ(row[v], full[v]) << v;
        else ASSERT_EQ(row[v], -std::numeric_limits<float>::infinity()) << v;
      }
    }
    const std::vector<std::int32_t> bad = {V};
    std::vector<float> one(1);
    EXPECT_THROW(s.head_logits_compact(bad, one), Error);
  }
  fs::remove_all(dir);
}
