#include "io/gguf_writer.h"

#include <cstring>
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <system_error>

#include "util/error.h"
#include "util/progress.h"

namespace ringlm::io {

void gguf_append_bytes(std::vector<std::uint8_t>& out, const void* data, std::size_t n) {
  // resize + memcpy rather than insert(): GCC 12 warns falsely on vector range inserts.
  const std::size_t old = out.size();
  out.resize(old + n);
  if (n) std::memcpy(out.data() + old, data, n);
}

void gguf_append_string(std::vector<std::uint8_t>& out, std::string_view s) {
  gguf_append<std::uint64_t>(out, s.size());
  gguf_append_bytes(out, s.data(), s.size());
}

GgufWriter::GgufWriter(std::uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    fail("GGUF writer: alignment ", alignment, " is not a power of two");
  if (alignment != 32) add_u32("general.alignment", alignment);
}

void GgufWriter::begin_kv(std::string_view key, GgufValueType type) {
  if (key.empty()) fail("GGUF writer: empty metadata key");
  if (!keys_.emplace(key).second) fail("GGUF writer: metadata key '", key, "' added twice");
  ++n_kv_;
  gguf_append_string(kv_bytes_, key);
  gguf_append<std::uint32_t>(kv_bytes_, static_cast<std::uint32_t>(type));
}

#define RINGLM_GGUF_SCALAR(fn, T, vt)                     \
  void GgufWriter::fn(std::string_view key, T v) {        \
    begin_kv(key, GgufValueType::vt);                     \
    gguf_append<T>(kv_bytes_, v);                         \
  }
RINGLM_GGUF_SCALAR(add_u8, std::uint8_t, U8)
RINGLM_GGUF_SCALAR(add_i8, std::int8_t, I8)
RINGLM_GGUF_SCALAR(add_u16, std::uint16_t, U16)
RINGLM_GGUF_SCALAR(add_i16, std::int16_t, I16)
RINGLM_GGUF_SCALAR(add_u32, std::uint32_t, U32)
RINGLM_GGUF_SCALAR(add_i32, std::int32_t, I32)
RINGLM_GGUF_SCALAR(add_u64, std::uint64_t, U64)
RINGLM_GGUF_SCALAR(add_i64, std::int64_t, I64)
RINGLM_GGUF_SCALAR(add_f32, float, F32)
RINGLM_GGUF_SCALAR(add_f64, double, F64)
#undef RINGLM_GGUF_SCALAR

void GgufWriter::add_bool(std::string_view key, bool v) {
  begin_kv(key, GgufValueType::BOOL);
  gguf_append<std::uint8_t>(kv_bytes_, v ? 1 : 0);
}

void GgufWriter::add_string(std::string_view key, std::string_view v) {
  begin_kv(key, GgufValueType::STRING);
  gguf_append_string(kv_bytes_, v);
}

void GgufWriter::add_array_encoded(std::string_view key, GgufValueType elem_type, std::uint64_t count,
                                   std::span<const std::uint8_t> bytes) {
  begin_kv(key, GgufValueType::ARRAY);
  gguf_append<std::uint32_t>(kv_bytes_, static_cast<std::uint32_t>(elem_type));
  gguf_append<std::uint64_t>(kv_bytes_, count);
  gguf_append_bytes(kv_bytes_, bytes.data(), bytes.size());
}

void GgufWriter::add_array_u32(std::string_view key, std::span<const std::uint32_t> v) {
  std::vector<std::uint8_t> enc;
  for (auto x : v) gguf_append(enc, x);
  add_array_encoded(key, GgufValueType::U32, v.size(), enc);
}

void GgufWriter::add_array_i32(std::string_view key, std::span<const std::int32_t> v) {
  std::vector<std::uint8_t> enc;
  for (auto x : v) gguf_append(enc, x);
  add_array_encoded(key, GgufValueType::I32, v.size(), enc);
}

void GgufWriter::add_array_f32(std::string_view key, std::span<const float> v) {
  std::vector<std::uint8_t> enc;
  for (auto x : v) gguf_append(enc, x);
  add_array_encoded(key, GgufValueType::F32, v.size(), enc);
}

void GgufWriter::add_array_bool(std::string_view key, const std::vector<bool>& v) {
  std::vector<std::uint8_t> enc;
  for (bool x : v) enc.push_back(x ? 1 : 0);
  add_array_encoded(key, GgufValueType::BOOL, v.size(), enc);
}

void GgufWriter::add_array_string(std::string_view key, const std::vector<std::string>& v) {
  std::vector<std::uint8_t> enc;
  for (const auto& s : v) gguf_append_string(enc, s);
  add_array_encoded(key, GgufValueType::STRING, v.size(), enc);
}

std::uint64_t GgufWriter::check_tensor(std::string_view name, std::uint32_t type,
                                       const std::vector<std::int64_t>& ne) {
  const GgmlTypeInfo* info = ggml_type_info(type);
  if (!info) fail("GGUF writer: tensor '", name, "' has unknown ggml type ", type);
  if (name.empty() || name.size() > 63)
    fail("GGUF writer: tensor name '", name, "' must be 1 to 63 bytes long");
  if (ne.empty() || ne.size() > 4) fail("GGUF writer: tensor '", name, "' must have 1 to 4 dimensions");
  std::int64_t numel = 1;
  for (auto d : ne) {
    if (d <= 0 || d > INT64_MAX / numel) fail("GGUF writer: tensor '", name, "' has a bad dimension ", d);
    numel *= d;
  }
  if (ne[0] % info->block_elems != 0)
    fail("GGUF writer: tensor '", name, "': first dimension ", ne[0], " is not a multiple of the ",
         info->name, " block size ", info->block_elems);
  if (tensor_names_.count(std::string(name))) fail("GGUF writer: tensor '", name, "' added twice");
  return static_cast<std::uint64_t>(numel / info->block_elems * info->block_bytes);
}

void GgufWriter::add_tensor(std::string_view name, std::uint32_t type, std::vector<std::int64_t> ne,
                            std::span<const std::uint8_t> data) {
  const std::uint64_t expected = check_tensor(name, type, ne);
  if (data.size() != expected)
    fail("GGUF writer: tensor '", name, "' has ", data.size(), " bytes, ", ggml_type_name(type),
         " shape needs ", expected);
  tensor_names_.emplace(name);
  tensors_.push_back({std::string(name), type, std::move(ne), expected, {data.begin(), data.end()}, nullptr});
}

void GgufWriter::add_tensor_lazy(std::string_view name, std::uint32_t type, std::vector<std::int64_t> ne,
                                 FillFn fill) {
  const std::uint64_t nbytes = check_tensor(name, type, ne);
  tensor_names_.emplace(name);
  tensors_.push_back({std::string(name), type, std::move(ne), nbytes, {}, std::move(fill)});
}

std::vector<std::uint8_t> GgufWriter::header_bytes() const {
  auto align = [&](std::uint64_t n) { return (n + alignment_ - 1) / alignment_ * alignment_; };
  // Header: magic, version 3, tensor count, metadata count.
  std::uint8_t header[24] = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  const std::uint64_t n_tensors = tensors_.size();
  std::memcpy(header + 8, &n_tensors, 8);
  std::memcpy(header + 16, &n_kv_, 8);
  std::vector<std::uint8_t> out(header, header + sizeof header);
  gguf_append_bytes(out, kv_bytes_.data(), kv_bytes_.size());
  std::uint64_t offset = 0;
  for (const auto& t : tensors_) {
    gguf_append_string(out, t.name);
    gguf_append<std::uint32_t>(out, static_cast<std::uint32_t>(t.ne.size()));
    for (auto d : t.ne) gguf_append<std::uint64_t>(out, static_cast<std::uint64_t>(d));
    gguf_append<std::uint32_t>(out, t.type);
    gguf_append<std::uint64_t>(out, offset);
    offset = align(offset + t.nbytes);
  }
  out.resize(align(out.size()), 0);
  return out;
}

const std::uint8_t* GgufWriter::tensor_bytes(const Tensor& t, std::vector<std::uint8_t>& scratch) const {
  if (!t.fill) return t.data.data();
  scratch.assign(t.nbytes, 0);
  t.fill(scratch.data());
  return scratch.data();
}

std::vector<std::uint8_t> GgufWriter::bytes() const {
  std::vector<std::uint8_t> out = header_bytes();
  std::vector<std::uint8_t> scratch;
  for (const auto& t : tensors_) {
    gguf_append_bytes(out, tensor_bytes(t, scratch), t.nbytes);
    out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  }
  return out;
}

void GgufWriter::write(const std::filesystem::path& path) const {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(tmp, ": cannot open for writing");
    const auto header = header_bytes();
    out.write(reinterpret_cast<const char*>(header.data()), static_cast<std::streamsize>(header.size()));
    std::vector<std::uint8_t> scratch;
    const char zeros[256] = {};
    std::uint64_t total = 0;
    for (const auto& t : tensors_) total += t.nbytes;
    ProgressStage progress("writing " + path.filename().string(), total, "bytes");
    for (const auto& t : tensors_) {
      out.write(reinterpret_cast<const char*>(tensor_bytes(t, scratch)), static_cast<std::streamsize>(t.nbytes));
      progress.add(t.nbytes);
      const std::uint64_t pad = (alignment_ - t.nbytes % alignment_) % alignment_;
      for (std::uint64_t left = pad; left > 0;) {
        const auto n = std::min<std::uint64_t>(left, sizeof zeros);
        out.write(zeros, static_cast<std::streamsize>(n));
        left -= n;
      }
    }
    if (!out) fail(tmp, ": write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail(path.string(), ": cannot rename from ", tmp, ": ", ec.message());
}

}  // namespace ringlm::io
