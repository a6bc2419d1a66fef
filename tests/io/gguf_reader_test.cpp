// GGUF reader/writer: round trip of every metadata type and of tensors in every type,
// and robustness: every truncation and thousands of random corruptions of a valid file
// must give a ringlm::Error (never a crash or an out-of-bounds read: run under ASan).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "io/gguf_reader.h"
#include "io/gguf_writer.h"
#include "kernels/dequant_ggml.h"
#include "util/error.h"

using namespace ringlm;
using namespace ringlm::io;

namespace {

std::vector<std::uint8_t> sample_file(std::uint32_t alignment = 32) {
  GgufWriter w(alignment);
  w.add_string("general.architecture", "test");
  w.add_u8("k.u8", 200);
  w.add_i8("k.i8", -100);
  w.add_u16("k.u16", 60000);
  w.add_i16("k.i16", -30000);
  w.add_u32("k.u32", 4000000000u);
  w.add_i32("k.i32", -2000000000);
  w.add_u64("k.u64", 18000000000000000000ull);
  w.add_i64("k.i64", -9000000000000000000ll);
  w.add_f32("k.f32", 1.5f);
  w.add_f64("k.f64", -2.25);
  w.add_bool("k.bool", true);
  w.add_string("k.str", std::string("a\0b", 3));
  const std::uint32_t u32s[] = {1, 2, 3};
  w.add_array_u32("k.arr_u32", u32s);
  w.add_array_string("k.arr_str", {"x", "", "hello"});
  w.add_array_bool("k.arr_bool", {true, false, true});
  // [[1, 2], ["s"]] : an array of arrays.
  std::vector<std::uint8_t> nested;
  gguf_append<std::uint32_t>(nested, static_cast<std::uint32_t>(GgufValueType::I32));
  gguf_append<std::uint64_t>(nested, 2);
  gguf_append<std::int32_t>(nested, 1);
  gguf_append<std::int32_t>(nested, 2);
  gguf_append<std::uint32_t>(nested, static_cast<std::uint32_t>(GgufValueType::STRING));
  gguf_append<std::uint64_t>(nested, 1);
  gguf_append_string(nested, "s");
  w.add_array_encoded("k.nested", GgufValueType::ARRAY, 2, nested);

  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1,
                  DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const std::int64_t cols = 256, rows = 3;
    std::vector<float> x(cols * rows);
    for (auto& v : x) v = normal(rng);
    std::vector<std::uint8_t> bytes(kernels::row_bytes(t, cols) * rows);
    kernels::quantize_row(t, x.data(), bytes.data(), cols * rows);
    w.add_tensor(std::string("t.") + dtype_name(t), ggml_type_of(t), {cols, rows}, bytes);
  }
  return w.bytes();
}

}  // namespace

TEST(GgufReader, RoundTripsEveryMetadataType) {
  const auto bytes = sample_file();
  auto f = GgufFile::from_memory(bytes.data(), bytes.size(), "sample.gguf");
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->get_string("general.architecture"), "test");
  EXPECT_EQ(f->get_int("k.u8"), 200);
  EXPECT_EQ(f->get_int("k.i8"), -100);
  EXPECT_EQ(f->get_int("k.u16"), 60000);
  EXPECT_EQ(f->get_int("k.i16"), -30000);
  EXPECT_EQ(f->get_int("k.u32"), 4000000000ll);
  EXPECT_EQ(f->get_int("k.i32"), -2000000000);
  EXPECT_EQ(f->find("k.u64")->u, 18000000000000000000ull);
  EXPECT_THROW(f->get_int("k.u64"), Error);  // does not fit in int64
  EXPECT_EQ(f->get_int("k.i64"), -9000000000000000000ll);
  EXPECT_EQ(f->get_float("k.f32"), 1.5);
  EXPECT_EQ(f->get_float("k.f64"), -2.25);
  EXPECT_TRUE(f->get_bool_or("k.bool", false));
  EXPECT_EQ(f->get_string("k.str"), std::string_view("a\0b", 3));
  EXPECT_EQ(f->get_array("k.arr_u32").ints("u32"), (std::vector<std::int64_t>{1, 2, 3}));
  auto strs = f->get_array("k.arr_str").strings("s");
  ASSERT_EQ(strs.size(), 3u);
  EXPECT_EQ(strs[2], "hello");
  EXPECT_EQ(strs[1], "");
  EXPECT_EQ(f->get_array("k.arr_bool").bools("b"), (std::vector<bool>{true, false, true}));
  const auto& nested = f->get_array("k.nested");
  ASSERT_EQ(nested.count, 2u);
  EXPECT_EQ(nested.at(0).arr.ints("n"), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(nested.at(1).arr.strings("n")[0], "s");
  EXPECT_EQ(f->find("k.nested")->to_string(), "[[1, 2], [\"s\"]]");
  EXPECT_THROW(f->get_string("k.u8"), Error);
  EXPECT_THROW(f->get_int("missing"), Error);
  EXPECT_EQ(f->get_int_or("missing", 7), 7);
}

TEST(GgufReader, TensorsAreAlignedAndIntact) {
  for (std::uint32_t alignment : {32u, 64u, 8u}) {
    const auto bytes = sample_file(alignment);
    auto f = GgufFile::from_memory(bytes.data(), bytes.size(), "sample.gguf");
    EXPECT_EQ(f->alignment(), alignment);
    ASSERT_EQ(f->tensors().size(), 9u);
    for (const auto& t : f->tensors()) {
      EXPECT_EQ(t.file_offset % alignment, 0u) << t.name;
      EXPECT_EQ(t.ne, (std::vector<std::int64_t>{256, 3}));
      const DType dt = *t.type_info().dtype;
      EXPECT_EQ(t.name, std::string("t.") + dtype_name(dt));
      EXPECT_EQ(t.nbytes, static_cast<std::uint64_t>(kernels::row_bytes(dt, 256) * 3));
    }
    // Same random data as written: compare the F32 tensor's first value with a re-draw.
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    const float first = normal(rng);
    float stored;
    std::memcpy(&stored, f->find_tensor("t.F32")->data, 4);
    EXPECT_EQ(stored, first);
  }
}

TEST(GgufReader, EveryTruncationIsACleanError) {
  const auto bytes = sample_file();
  // Each prefix is a distinct file whose buffer ends exactly at the cut (ASan sees overreads).
  for (std::size_t n = 0; n < bytes.size(); n += (n < 2000 ? 1 : 97)) {
    std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW(GgufFile::from_memory(cut.data(), cut.size(), "cut.gguf"), Error) << "prefix " << n;
  }
}

TEST(GgufReader, RandomCorruptionNeverCrashes) {
  const auto bytes = sample_file();
  std::mt19937 rng(11);
  const std::size_t header_end = GgufFile::from_memory(bytes.data(), bytes.size(), "x")->data_offset();
  int errors = 0, parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<std::uint8_t> b(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(header_end));
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const std::size_t at = rng() % b.size();
      switch (rng() % 3) {
        case 0: b[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8)); break;
        case 1: b[at] = 0xff; break;
        default: b[at] = static_cast<std::uint8_t>(rng()); break;
      }
    }
    b.resize(bytes.size(), 0);  // keep a data section of the original size
    try {
      auto f = GgufFile::from_memory(b.data(), b.size(), "fuzzed.gguf");
      for (const auto& kv : f->metadata()) (void)kv.value.to_string();
      ++parsed;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("fuzzed.gguf"), std::string::npos) << e.what();
      ++errors;
    }
  }
  EXPECT_GT(errors, 1000);  // most corruptions are detected
  EXPECT_GT(parsed, 10);    // and harmless ones (e.g. in string bytes) still parse
}

TEST(GgufReader, RejectsOtherVersionsAndEndianness) {
  auto bytes = sample_file();
  auto with_version = [&](std::uint32_t v) {
    auto b = bytes;
    std::memcpy(b.data() + 4, &v, 4);
    try {
      GgufFile::from_memory(b.data(), b.size(), "v.gguf");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(with_version(1).find("version 1 is not supported"), std::string::npos);
  EXPECT_NE(with_version(0x03000000).find("big-endian"), std::string::npos);
  EXPECT_NE(with_version(4).find("unsupported GGUF version 4"), std::string::npos);
  EXPECT_EQ(with_version(2), "no error");
  bytes[0] = 'X';
  EXPECT_THROW(GgufFile::from_memory(bytes.data(), bytes.size(), "m.gguf"), Error);
}

TEST(GgufWriter, RejectsInconsistentTensors) {
  GgufWriter w;
  std::vector<std::uint8_t> data(18);
  EXPECT_THROW(w.add_tensor("a", ggml_type_of(DType::Q4_0), {16}, data), Error);   // not a block multiple
  EXPECT_THROW(w.add_tensor("a", ggml_type_of(DType::Q4_0), {64}, data), Error);   // wrong byte count
  w.add_tensor("a", ggml_type_of(DType::Q4_0), {32}, data);
  EXPECT_THROW(w.add_tensor("a", ggml_type_of(DType::Q4_0), {32}, data), Error);   // duplicate
  EXPECT_THROW(w.add_tensor(std::string(64, 'n'), 0, {1}, std::vector<std::uint8_t>(4)), Error);
  w.add_u32("x", 1);
  EXPECT_THROW(w.add_u32("x", 2), Error);
}
