#include "io/gguf_reader.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>

#include "util/error.h"

namespace ringlm::io {

namespace {

constexpr std::uint32_t kMaxDims = 4;         // as ggml
constexpr std::size_t kMaxTensorName = 63;    // ggml's GGML_MAX_NAME (64) minus the NUL
constexpr int kMaxArrayDepth = 8;             // nested arrays deeper than this are refused
constexpr std::uint64_t kMinKvBytes = 8 + 4 + 1;           // empty key is refused, so >= this
constexpr std::uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

template <typename T>
T load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// A read position in the mapping that can never move past its end: every read checks the
// remaining length first and reports what was being read and where.
class Cursor {
 public:
  Cursor(const std::uint8_t* base, std::size_t size, const std::string& file)
      : base_(base), size_(size), file_(file) {}

  std::uint64_t pos() const { return pos_; }
  std::uint64_t remaining() const { return size_ - pos_; }
  const std::uint8_t* here() const { return base_ + pos_; }

  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v = load<T>(base_ + pos_);
    pos_ += sizeof(T);
    return v;
  }

  std::string_view read_string(std::string_view what) {
    const std::uint64_t at = pos_;
    const auto len = read<std::uint64_t>(what);
    if (len > remaining())
      fail_model_file(file_, ": ", what, " at byte ", at, ": string length ", len,
           " runs past the end of the file (", remaining(), " bytes left)");
    std::string_view s(reinterpret_cast<const char*>(base_ + pos_), static_cast<std::size_t>(len));
    pos_ += len;
    return s;
  }

  void skip(std::uint64_t n, std::string_view what) {
    need(n, what);
    pos_ += n;
  }

 private:
  void need(std::uint64_t n, std::string_view what) const {
    if (n > remaining())
      fail_model_file(file_, ": truncated at byte ", pos_, " while reading ", what, " (", n,
           " bytes needed, ", remaining(), " left)");
  }

  const std::uint8_t* base_;
  std::uint64_t size_;
  std::uint64_t pos_ = 0;
  const std::string& file_;
};

GgufValueType checked_value_type(std::uint32_t raw, const std::string& file, std::string_view what,
                                 std::uint64_t at) {
  if (raw >= kGgufValueTypeCount)
    fail_model_file(file, ": ", what, " at byte ", at, ": unknown metadata value type ", raw);
  return static_cast<GgufValueType>(raw);
}

// Decodes a scalar of a fixed-size type at p (bounds already checked).
GgufValue decode_scalar(GgufValueType t, const std::uint8_t* p) {
  GgufValue v;
  v.type = t;
  switch (t) {
    case GgufValueType::U8: v.u = load<std::uint8_t>(p); break;
    case GgufValueType::I8: v.i = load<std::int8_t>(p); break;
    case GgufValueType::U16: v.u = load<std::uint16_t>(p); break;
    case GgufValueType::I16: v.i = load<std::int16_t>(p); break;
    case GgufValueType::U32: v.u = load<std::uint32_t>(p); break;
    case GgufValueType::I32: v.i = load<std::int32_t>(p); break;
    case GgufValueType::F32: v.f = load<float>(p); break;
    case GgufValueType::BOOL: v.u = load<std::uint8_t>(p); break;
    case GgufValueType::U64: v.u = load<std::uint64_t>(p); break;
    case GgufValueType::I64: v.i = load<std::int64_t>(p); break;
    case GgufValueType::F64: v.f = load<double>(p); break;
    case GgufValueType::STRING: case GgufValueType::ARRAY: break;
  }
  return v;
}

// Parses (and fully validates) one value of type t at the cursor.
GgufValue parse_value(Cursor& cur, GgufValueType t, const std::string& file, const std::string& what,
                      int depth) {
  const std::uint64_t at = cur.pos();
  if (t == GgufValueType::STRING) {
    GgufValue v;
    v.type = t;
    v.str = cur.read_string(what);
    return v;
  }
  if (t != GgufValueType::ARRAY) {
    const std::uint64_t n = gguf_value_type_size(t);
    const std::uint8_t* p = cur.here();
    cur.skip(n, what);
    GgufValue v = decode_scalar(t, p);
    if (t == GgufValueType::BOOL && v.u > 1)
      fail_model_file(file, ": ", what, " at byte ", at, ": bool value ", v.u, " is neither 0 nor 1");
    return v;
  }
  if (depth >= kMaxArrayDepth)
    fail_model_file(file, ": ", what, " at byte ", at, ": arrays nested deeper than ", kMaxArrayDepth);
  GgufValue v;
  v.type = GgufValueType::ARRAY;
  v.arr.elem_type = checked_value_type(cur.read<std::uint32_t>(what), file, what, at);
  v.arr.count = cur.read<std::uint64_t>(what);
  // Every element takes at least this many bytes, so a count that cannot fit in what is
  // left is refused before any loop runs (this bounds all loops by the file size).
  const std::uint64_t elem_size = gguf_value_type_size(v.arr.elem_type);
  const std::uint64_t min_elem = elem_size ? elem_size
                                 : v.arr.elem_type == GgufValueType::STRING ? 8 : 12;
  if (v.arr.count > cur.remaining() / min_elem)
    fail_model_file(file, ": ", what, " at byte ", at, ": array of ", v.arr.count, " ",
         gguf_value_type_name(v.arr.elem_type), " elements does not fit in the ",
         cur.remaining(), " bytes left in the file");
  v.arr.data = cur.here();
  const std::uint64_t start = cur.pos();
  if (elem_size) {
    cur.skip(v.arr.count * elem_size, what);
    if (v.arr.elem_type == GgufValueType::BOOL)
      for (std::uint64_t k = 0; k < v.arr.count; ++k)
        if (v.arr.data[k] > 1)
          fail_model_file(file, ": ", what, " at byte ", start + k, ": bool element ", k, " has value ",
               static_cast<int>(v.arr.data[k]));
  } else if (v.arr.elem_type == GgufValueType::STRING) {
    for (std::uint64_t k = 0; k < v.arr.count; ++k) cur.read_string(what);
  } else {
    for (std::uint64_t k = 0; k < v.arr.count; ++k)
      parse_value(cur, v.arr.elem_type, file, what + "[" + std::to_string(k) + "]", depth + 1);
  }
  v.arr.nbytes = cur.pos() - start;
  return v;
}

// Size of an already validated encoded value of type t at p.
std::uint64_t encoded_size(GgufValueType t, const std::uint8_t* p) {
  if (t == GgufValueType::STRING) return 8 + load<std::uint64_t>(p);
  if (t != GgufValueType::ARRAY) return gguf_value_type_size(t);
  const auto et = static_cast<GgufValueType>(load<std::uint32_t>(p));
  const auto count = load<std::uint64_t>(p + 4);
  if (const auto es = gguf_value_type_size(et)) return 12 + count * es;
  std::uint64_t n = 12;
  for (std::uint64_t k = 0; k < count; ++k) n += encoded_size(et, p + n);
  return n;
}

// Decodes an already validated value of type t at p.
GgufValue decode_value(GgufValueType t, const std::uint8_t* p) {
  if (t == GgufValueType::STRING) {
    GgufValue v;
    v.type = t;
    v.str = std::string_view(reinterpret_cast<const char*>(p + 8),
                             static_cast<std::size_t>(load<std::uint64_t>(p)));
    return v;
  }
  if (t == GgufValueType::ARRAY) {
    GgufValue v;
    v.type = t;
    v.arr.elem_type = static_cast<GgufValueType>(load<std::uint32_t>(p));
    v.arr.count = load<std::uint64_t>(p + 4);
    v.arr.data = p + 12;
    v.arr.nbytes = encoded_size(t, p) - 12;
    return v;
  }
  return decode_scalar(t, p);
}

std::string render_double(double d) {
  std::ostringstream os;
  os.precision(9);
  os << d;
  return os.str();
}

std::string quote(std::string_view s, std::size_t max_len = 200) {
  std::string out = "\"";
  for (std::size_t k = 0; k < s.size() && k < max_len; ++k) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max_len) out += "...";
  return out + "\"";
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Values

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::U16:
    case GgufValueType::I16: case GgufValueType::U32: case GgufValueType::I32:
    case GgufValueType::U64: case GgufValueType::I64: return true;
    default: return false;
  }
}

std::string GgufValue::to_string(std::size_t max_elems) const {
  switch (type) {
    case GgufValueType::U8: case GgufValueType::U16: case GgufValueType::U32:
    case GgufValueType::U64: return std::to_string(u);
    case GgufValueType::I8: case GgufValueType::I16: case GgufValueType::I32:
    case GgufValueType::I64: return std::to_string(i);
    case GgufValueType::F32: case GgufValueType::F64: return render_double(f);
    case GgufValueType::BOOL: return u ? "true" : "false";
    case GgufValueType::STRING: return quote(str);
    case GgufValueType::ARRAY: {
      std::string out = "[";
      std::uint64_t off = 0;
      for (std::uint64_t k = 0; k < arr.count && k < max_elems; ++k) {
        if (k) out += ", ";
        out += decode_value(arr.elem_type, arr.data + off).to_string(max_elems);
        off += encoded_size(arr.elem_type, arr.data + off);
      }
      if (arr.count > max_elems) out += ", ... (" + std::to_string(arr.count) + " " +
                                       gguf_value_type_name(arr.elem_type) + ")";
      return out + "]";
    }
  }
  return "?";
}

GgufValue GgufArray::at(std::uint64_t k) const {
  if (k >= count) fail_model_file("GGUF array index ", k, " out of range (", count, " elements)");
  if (const auto es = gguf_value_type_size(elem_type)) return decode_scalar(elem_type, data + k * es);
  std::uint64_t off = 0;
  for (std::uint64_t j = 0; j < k; ++j) off += encoded_size(elem_type, data + off);
  return decode_value(elem_type, data + off);
}

std::vector<GgufValue> GgufArray::elements() const {
  std::vector<GgufValue> out;
  out.reserve(static_cast<std::size_t>(count));
  std::uint64_t off = 0;
  for (std::uint64_t k = 0; k < count; ++k) {
    out.push_back(decode_value(elem_type, data + off));
    off += encoded_size(elem_type, data + off);
  }
  return out;
}

std::vector<std::string_view> GgufArray::strings(std::string_view what) const {
  if (elem_type != GgufValueType::STRING)
    fail_model_file(what, ": expected an array of strings, found an array of ", gguf_value_type_name(elem_type));
  std::vector<std::string_view> out;
  out.reserve(static_cast<std::size_t>(count));
  const std::uint8_t* p = data;
  for (std::uint64_t k = 0; k < count; ++k) {
    const auto len = load<std::uint64_t>(p);
    out.emplace_back(reinterpret_cast<const char*>(p + 8), static_cast<std::size_t>(len));
    p += 8 + len;
  }
  return out;
}

std::vector<std::int64_t> GgufArray::ints(std::string_view what) const {
  const std::uint64_t es = gguf_value_type_size(elem_type);
  if (es == 0 || elem_type == GgufValueType::BOOL || elem_type == GgufValueType::F32 ||
      elem_type == GgufValueType::F64)
    fail_model_file(what, ": expected an array of integers, found an array of ", gguf_value_type_name(elem_type));
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(count));
  const bool is_unsigned = elem_type == GgufValueType::U8 || elem_type == GgufValueType::U16 ||
                           elem_type == GgufValueType::U32 || elem_type == GgufValueType::U64;
  for (std::uint64_t k = 0; k < count; ++k) {
    const GgufValue v = decode_scalar(elem_type, data + k * es);
    if (is_unsigned && v.u > static_cast<std::uint64_t>(INT64_MAX))
      fail_model_file(what, ": element ", k, " (", v.u, ") is out of range");
    out.push_back(is_unsigned ? static_cast<std::int64_t>(v.u) : v.i);
  }
  return out;
}

std::vector<float> GgufArray::floats(std::string_view what) const {
  if (elem_type == GgufValueType::F32 || elem_type == GgufValueType::F64) {
    std::vector<float> out;
    out.reserve(static_cast<std::size_t>(count));
    const std::uint64_t es = gguf_value_type_size(elem_type);
    for (std::uint64_t k = 0; k < count; ++k)
      out.push_back(static_cast<float>(decode_scalar(elem_type, data + k * es).f));
    return out;
  }
  if (elem_type == GgufValueType::STRING || elem_type == GgufValueType::ARRAY ||
      elem_type == GgufValueType::BOOL)
    fail_model_file(what, ": expected an array of numbers, found an array of ", gguf_value_type_name(elem_type));
  std::vector<float> out;
  for (auto v : ints(what)) out.push_back(static_cast<float>(v));
  return out;
}

std::vector<bool> GgufArray::bools(std::string_view what) const {
  if (elem_type != GgufValueType::BOOL)
    fail_model_file(what, ": expected an array of bools, found an array of ", gguf_value_type_name(elem_type));
  std::vector<bool> out(static_cast<std::size_t>(count));
  for (std::uint64_t k = 0; k < count; ++k) out[k] = data[k] != 0;
  return out;
}

std::int64_t GgufTensorInfo::numel() const {
  std::int64_t n = 1;
  for (auto d : ne) n *= d;  // overflow excluded at parse time
  return n;
}

// ---------------------------------------------------------------------------------------
// File

GgufFile::GgufFile(const std::filesystem::path& path) {
  mapping_ = MappedFile(path);
  base_ = mapping_.data();
  size_ = mapping_.size();
  label_ = path.string();
  parse();
}

std::unique_ptr<GgufFile> GgufFile::from_memory(const std::uint8_t* data, std::size_t size,
                                                std::string label) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->base_ = data;
  f->size_ = size;
  f->label_ = std::move(label);
  f->parse();
  return f;
}

void GgufFile::parse() {
  const std::string& file = label_;
  Cursor cur(base_, size_, file);
  if (size_ < 4 || std::memcmp(base_, "GGUF", 4) != 0)
    fail_model_file(file, ": not a GGUF file (the first 4 bytes are not \"GGUF\")");
  cur.skip(4, "magic");
  version_ = cur.read<std::uint32_t>("version");
  if ((version_ & 0xffffu) == 0 && (version_ >> 16) != 0)
    fail_model_file(file, ": GGUF version field reads 0x", std::hex, version_, std::dec,
         ": this is a big-endian GGUF file, which ringlm does not support");
  if (version_ == 1)
    fail_unsupported(file, ": GGUF version 1 is not supported (only versions 2 and 3); re-convert the model");
  if (version_ != 2 && version_ != 3)
    fail_unsupported(file, ": unsupported GGUF version ", version_, " (ringlm reads versions 2 and 3)");

  const auto n_tensors = cur.read<std::uint64_t>("tensor count");
  const auto n_kv = cur.read<std::uint64_t>("metadata count");
  if (n_kv > cur.remaining() / kMinKvBytes)
    fail_model_file(file, ": header at byte 16 declares ", n_kv, " metadata entries, more than the ",
         cur.remaining(), " bytes left in the file can hold");
  if (n_tensors > cur.remaining() / kMinTensorInfoBytes)
    fail_model_file(file, ": header at byte 8 declares ", n_tensors, " tensors, more than the ",
         cur.remaining(), " bytes left in the file can hold");

  kv_.reserve(static_cast<std::size_t>(n_kv));
  for (std::uint64_t k = 0; k < n_kv; ++k) {
    const std::uint64_t at = cur.pos();
    const std::string entry = "key of metadata entry " + std::to_string(k);
    std::string key(cur.read_string(entry));
    if (key.empty()) fail_model_file(file, ": metadata entry ", k, " at byte ", at, " has an empty key");
    if (kv_index_.count(key))
      fail_model_file(file, ": metadata key '", key, "' at byte ", at, " appears twice");
    const std::string what = "metadata key '" + key + "'";
    const std::uint64_t type_at = cur.pos();
    const auto type = checked_value_type(cur.read<std::uint32_t>(what), file, what, type_at);
    GgufValue value = parse_value(cur, type, file, what, 0);
    kv_index_.emplace(key, kv_.size());
    kv_.push_back({std::move(key), value, at});
  }

  if (const GgufValue* a = find("general.alignment")) {
    const auto& entry = kv_[kv_index_.at("general.alignment")];
    if (a->type != GgufValueType::U32)
      fail_model_file(file, ": metadata key 'general.alignment' at byte ", entry.offset, " has type ",
           gguf_value_type_name(a->type), ", expected u32");
    if (a->u == 0 || (a->u & (a->u - 1)) != 0)
      fail_model_file(file, ": metadata key 'general.alignment' at byte ", entry.offset, " is ", a->u,
           ", not a power of two");
    alignment_ = a->u;
  }

  tensors_.reserve(static_cast<std::size_t>(n_tensors));
  for (std::uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo t;
    t.info_offset = cur.pos();
    const std::string_view name = cur.read_string("name of tensor " + std::to_string(k));
    t.name = std::string(name);
    const std::string where = file + ": tensor '" + t.name + "' (info at byte " +
                              std::to_string(t.info_offset) + ")";
    if (t.name.empty()) fail_model_file(where, ": empty tensor name");
    if (t.name.size() > kMaxTensorName)
      fail_model_file(where, ": name is ", t.name.size(), " bytes long, more than ", kMaxTensorName);
    if (tensor_index_.count(t.name)) fail_model_file(where, ": a tensor of this name appears twice");
    const auto n_dims = cur.read<std::uint32_t>("dimension count of tensor '" + t.name + "'");
    if (n_dims == 0 || n_dims > kMaxDims)
      fail_model_file(where, ": has ", n_dims, " dimensions (ggml allows 1 to ", kMaxDims, ")");
    std::int64_t numel = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto ne = cur.read<std::uint64_t>("shape of tensor '" + t.name + "'");
      if (ne == 0) fail_model_file(where, ": dimension ", d, " is zero");
      if (ne > static_cast<std::uint64_t>(INT64_MAX) ||
          static_cast<std::int64_t>(ne) > INT64_MAX / numel)
        fail_model_file(where, ": element count overflows (dimension ", d, " is ", ne, ")");
      numel *= static_cast<std::int64_t>(ne);
      t.ne.push_back(static_cast<std::int64_t>(ne));
    }
    const std::uint64_t type_at = cur.pos();
    t.type = cur.read<std::uint32_t>("type of tensor '" + t.name + "'");
    const GgmlTypeInfo* info = ggml_type_info(t.type);
    if (!info) fail_model_file(where, ": unknown ggml type ", t.type, " at byte ", type_at);
    if (t.ne[0] % info->block_elems != 0)
      fail_model_file(where, ": first dimension ", t.ne[0], " is not a multiple of the ", info->name,
           " block size ", info->block_elems);
    const std::int64_t blocks = numel / info->block_elems;
    if (blocks > INT64_MAX / info->block_bytes)
      fail_model_file(where, ": data size overflows (", numel, " ", info->name, " elements)");
    t.nbytes = static_cast<std::uint64_t>(blocks * info->block_bytes);
    const std::uint64_t offset_at = cur.pos();
    t.offset = cur.read<std::uint64_t>("data offset of tensor '" + t.name + "'");
    if (t.offset % alignment_ != 0)
      fail_model_file(where, ": data offset ", t.offset, " (at byte ", offset_at,
           ") is not a multiple of the alignment ", alignment_);
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment after the tensor infos.
  data_offset_ = (cur.pos() + alignment_ - 1) / alignment_ * alignment_;
  if (!tensors_.empty() && data_offset_ > size_)
    fail_model_file(file, ": data section would start at byte ", data_offset_, ", past the end of the file (",
         size_, " bytes)");
  const std::uint64_t data_size = data_offset_ <= size_ ? size_ - data_offset_ : 0;
  for (auto& t : tensors_) {
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      fail_model_file(file, ": tensor '", t.name, "' (info at byte ", t.info_offset, "): data [", t.offset,
           ", +", t.nbytes, ") runs past the end of the data section (", data_size,
           " bytes from byte ", data_offset_, ")");
    t.file_offset = data_offset_ + t.offset;
    t.data = base_ + t.file_offset;
  }
  std::vector<std::size_t> order(tensors_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const auto& prev = tensors_[order[k - 1]];
    const auto& cur_t = tensors_[order[k]];
    if (prev.offset + prev.nbytes > cur_t.offset)
      fail_model_file(file, ": tensor '", cur_t.name, "' data at offset ", cur_t.offset, " overlaps tensor '",
           prev.name, "' (offset ", prev.offset, ", ", prev.nbytes, " bytes)");
  }
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kv_[it->second].value;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {
[[noreturn]] void missing(const std::string& file, std::string_view key) {
  fail_model_file(file, ": metadata key '", key, "' is missing");
}
[[noreturn]] void wrong_type(const std::string& file, std::string_view key, const GgufValue& v,
                             const char* expected) {
  fail_model_file(file, ": metadata key '", key, "' has type ", gguf_value_type_name(v.type), ", expected ",
       expected);
}
}  // namespace

std::string_view GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) missing(label_, key);
  if (v->type != GgufValueType::STRING) wrong_type(label_, key, *v, "string");
  return v->str;
}

std::int64_t GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) missing(label_, key);
  if (!v->is_integer()) wrong_type(label_, key, *v, "an integer");
  switch (v->type) {
    case GgufValueType::U8: case GgufValueType::U16: case GgufValueType::U32: case GgufValueType::U64:
      if (v->u > static_cast<std::uint64_t>(INT64_MAX))
        fail_model_file(label_, ": metadata key '", key, "' value ", v->u, " is out of range");
      return static_cast<std::int64_t>(v->u);
    default: return v->i;
  }
}

std::int64_t GgufFile::get_int_or(std::string_view key, std::int64_t fallback) const {
  return find(key) ? get_int(key) : fallback;
}

double GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) missing(label_, key);
  if (v->type == GgufValueType::F32 || v->type == GgufValueType::F64) return v->f;
  if (v->is_integer()) return static_cast<double>(get_int(key));
  wrong_type(label_, key, *v, "a number");
}

double GgufFile::get_float_or(std::string_view key, double fallback) const {
  return find(key) ? get_float(key) : fallback;
}

bool GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (v->type != GgufValueType::BOOL) wrong_type(label_, key, *v, "bool");
  return v->u != 0;
}

const GgufArray& GgufFile::get_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) missing(label_, key);
  if (v->type != GgufValueType::ARRAY) wrong_type(label_, key, *v, "array");
  return v->arr;
}

bool is_gguf_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

}  // namespace ringlm::io
