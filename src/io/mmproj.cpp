#include "io/mmproj.h"

#include <cmath>
#include <cstring>

#include "util/error.h"
#include "util/float16.h"

namespace ringlm::io {
namespace {

// One tower tensor (or, for a clipped linear, its weight and four clip bounds): the name
// after the tower/layer prefix in ringlm's (Hugging Face) naming and in llama.cpp's.
struct NamePair {
  const char* tower;
  const char* gguf;
  bool linear;  // tower "<x>.linear.weight" / "<x>.input_min"... <-> gguf "<y>.weight" / "<y>.input_min"...
};

const NamePair kVisionGlobal[] = {
    {"vision_tower.patch_embedder.input_proj.weight", "v.patch_embd.weight", false},
    {"vision_tower.patch_embedder.position_embedding_table", "v.position_embd.weight", false},
    {"vision_tower.std_bias", "v.std_bias", false},
    {"vision_tower.std_scale", "v.std_scale", false},
    {"embed_vision.embedding_projection.weight", "mm.input_projection.weight", false},
};
const NamePair kVisionLayer[] = {
    {"input_layernorm.weight", "ln1.weight", false},
    {"post_attention_layernorm.weight", "attn_post_norm.weight", false},
    {"pre_feedforward_layernorm.weight", "ln2.weight", false},
    {"post_feedforward_layernorm.weight", "ffn_post_norm.weight", false},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", false},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", false},
    {"self_attn.q_proj", "attn_q", true},
    {"self_attn.k_proj", "attn_k", true},
    {"self_attn.v_proj", "attn_v", true},
    {"self_attn.o_proj", "attn_out", true},
    {"mlp.gate_proj", "ffn_gate", true},
    {"mlp.up_proj", "ffn_up", true},
    {"mlp.down_proj", "ffn_down", true},
};
const NamePair kAudioGlobal[] = {
    {"audio_tower.subsample_conv_projection.layer0.conv.weight", "a.conv1d.0.weight", false},
    {"audio_tower.subsample_conv_projection.layer0.norm.weight", "a.conv1d.0.norm.weight", false},
    {"audio_tower.subsample_conv_projection.layer1.conv.weight", "a.conv1d.1.weight", false},
    {"audio_tower.subsample_conv_projection.layer1.norm.weight", "a.conv1d.1.norm.weight", false},
    {"audio_tower.subsample_conv_projection.input_proj_linear.weight", "a.input_projection.weight", false},
    {"audio_tower.output_proj.weight", "a.pre_encode.out.weight", false},
    {"audio_tower.output_proj.bias", "a.pre_encode.out.bias", false},
    {"embed_audio.embedding_projection.weight", "mm.a.input_projection.weight", false},
};
// llama.cpp's tensor map names the light-conv block's two norms the other way round
// (its loader swaps them back); what matters here is the file's names.
const NamePair kAudioLayer[] = {
    {"feed_forward1.pre_layer_norm.weight", "ffn_norm.weight", false},
    {"feed_forward1.post_layer_norm.weight", "ffn_post_norm.weight", false},
    {"feed_forward1.ffw_layer_1", "ffn_up", true},
    {"feed_forward1.ffw_layer_2", "ffn_down", true},
    {"feed_forward2.pre_layer_norm.weight", "ffn_norm_1.weight", false},
    {"feed_forward2.post_layer_norm.weight", "ffn_post_norm_1.weight", false},
    {"feed_forward2.ffw_layer_1", "ffn_up_1", true},
    {"feed_forward2.ffw_layer_2", "ffn_down_1", true},
    {"norm_pre_attn.weight", "attn_pre_norm.weight", false},
    {"norm_post_attn.weight", "attn_post_norm.weight", false},
    {"norm_out.weight", "ln2.weight", false},
    {"self_attn.q_proj", "attn_q", true},
    {"self_attn.k_proj", "attn_k", true},
    {"self_attn.v_proj", "attn_v", true},
    {"self_attn.post", "attn_out", true},
    {"self_attn.relative_k_proj.weight", "attn_k_rel.weight", false},
    {"self_attn.per_dim_scale", "per_dim_scale.weight", false},
    {"lconv1d.pre_layer_norm.weight", "conv_norm.weight", false},
    {"lconv1d.conv_norm.weight", "norm_conv.weight", false},
    {"lconv1d.linear_start", "conv_pw1", true},
    {"lconv1d.linear_end", "conv_pw2", true},
    {"lconv1d.depthwise_conv1d.weight", "conv_dw.weight", false},
};
const char* const kClipSuffixes[] = {"input_min", "input_max", "output_min", "output_max"};

constexpr char kPatchEmbd[] = "vision_tower.patch_embedder.input_proj.weight";

// `rest` after a pair's names, in the `from` naming -> the `to` naming; false if no match.
bool map_suffix(std::string_view rest, const NamePair& p, bool from_tower, std::string& out) {
  const std::string_view from = from_tower ? p.tower : p.gguf, to = from_tower ? p.gguf : p.tower;
  if (!p.linear) {
    if (rest != from) return false;
    out = to;
    return true;
  }
  if (rest.size() <= from.size() + 1 || rest.substr(0, from.size()) != from || rest[from.size()] != '.') return false;
  const std::string_view tail = rest.substr(from.size() + 1);
  const std::string_view weight_from = from_tower ? "linear.weight" : "weight";
  const std::string_view weight_to = from_tower ? "weight" : "linear.weight";
  if (tail == weight_from) {
    out = std::string(to) + "." + std::string(weight_to);
    return true;
  }
  for (const char* c : kClipSuffixes)
    if (tail == c) {
      out = std::string(to) + "." + c;
      return true;
    }
  return false;
}

// Splits "<prefix><N>.<rest>" and returns N, or -1.
long layer_of(std::string_view name, std::string_view prefix, std::string_view& rest) {
  if (name.substr(0, prefix.size()) != prefix) return -1;
  std::size_t i = prefix.size();
  long n = 0;
  const std::size_t start = i;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9' && i - start < 6) n = n * 10 + (name[i++] - '0');
  if (i == start || i >= name.size() || name[i] != '.') return -1;
  if (i - start > 1 && name[start] == '0') return -1;  // "01" is not a layer index
  rest = name.substr(i + 1);
  return n;
}

std::optional<std::string> map_name(std::string_view name, bool from_tower) {
  std::string out;
  for (const NamePair& p : kVisionGlobal)
    if (map_suffix(name, p, from_tower, out)) return out;
  for (const NamePair& p : kAudioGlobal)
    if (map_suffix(name, p, from_tower, out)) return out;
  struct Layered {
    const char* tower_prefix;
    const char* gguf_prefix;
    const NamePair* pairs;
    std::size_t n;
  };
  const Layered layered[] = {
      {"vision_tower.encoder.layers.", "v.blk.", kVisionLayer, std::size(kVisionLayer)},
      {"audio_tower.layers.", "a.blk.", kAudioLayer, std::size(kAudioLayer)},
  };
  for (const Layered& l : layered) {
    std::string_view rest;
    const long n = layer_of(name, from_tower ? l.tower_prefix : l.gguf_prefix, rest);
    if (n < 0) continue;
    for (std::size_t k = 0; k < l.n; ++k)
      if (map_suffix(rest, l.pairs[k], from_tower, out))
        return std::string(from_tower ? l.gguf_prefix : l.tower_prefix) + std::to_string(n) + "." + out;
  }
  return std::nullopt;
}

float read_float(const GgufTensorInfo& t, std::int64_t i) {
  switch (t.type_info().dtype.value_or(DType::I8)) {
    case DType::F32: {
      float f;
      std::memcpy(&f, t.data + 4 * i, 4);
      return f;
    }
    case DType::F16: {
      std::uint16_t h;
      std::memcpy(&h, t.data + 2 * i, 2);
      return fp16_to_f32(h);
    }
    case DType::BF16: {
      std::uint16_t h;
      std::memcpy(&h, t.data + 2 * i, 2);
      return bf16_to_f32(h);
    }
    default: break;
  }
  fail_internal("mmproj: read_float on a block type");
}

}  // namespace

std::optional<std::string> mmproj_gguf_name(std::string_view tower_name) { return map_name(tower_name, true); }
std::optional<std::string> mmproj_tower_name(std::string_view gguf_name) { return map_name(gguf_name, false); }

double mmproj_softplus(double x) { return x > 30.0 ? x : std::log1p(std::exp(x)); }
double mmproj_softplus_inverse(double y) { return y > 30.0 ? y : std::log(std::expm1(y)); }

std::string mmproj_projector(const GgufFile& f, std::string_view modality) {
  const std::string key = "clip." + std::string(modality) + ".projector_type";
  const std::string_view want = modality == "vision" ? "gemma4v" : "gemma4a";
  if (f.find(key)) return std::string(f.get_string(key));
  // Single-tower files may name the type once, for the whole file.
  if (f.find("clip.projector_type") && f.get_string("clip.projector_type") == want) return std::string(want);
  return "";
}

std::shared_ptr<const GgufFile> open_mmproj(const std::filesystem::path& path) {
  auto f = std::make_shared<const GgufFile>(path);
  const auto arch = f->get_string("general.architecture");
  if (arch != "clip")
    fail_model_file(f->path(), ": general.architecture is '", arch,
                    "', expected 'clip' (a llama.cpp mmproj file; pass the text model with --model)");
  const std::string v = mmproj_projector(*f, "vision"), a = mmproj_projector(*f, "audio");
  if (!v.empty() && v != "gemma4v")
    fail_unsupported(f->path(), ": clip.vision.projector_type is '", v, "'; ringlm reads Gemma 4's 'gemma4v'");
  if (!a.empty() && a != "gemma4a")
    fail_unsupported(f->path(), ": clip.audio.projector_type is '", a, "'; ringlm reads Gemma 4's 'gemma4a'");
  if (v.empty() && a.empty())
    fail_model_file(f->path(), ": no clip.vision.projector_type 'gemma4v' or clip.audio.projector_type 'gemma4a' "
                    "(not a Gemma 4 mmproj)");
  return f;
}

MmprojSource::MmprojSource(std::shared_ptr<const GgufFile> file) : file_(std::move(file)) {
  const GgufFile& f = *file_;
  for (const GgufTensorInfo& t : f.tensors()) {
    const auto tower = mmproj_tower_name(t.name);
    if (!tower)
      fail_unsupported(f.path(), ": tensor '", t.name, "' is not one of the Gemma 4 tower tensors ringlm computes");
    const GgmlTypeInfo& info = t.type_info();
    if (!info.dtype || (*info.dtype != DType::F32 && *info.dtype != DType::F16 && *info.dtype != DType::BF16 &&
                        *info.dtype != DType::Q8_0))
      fail_unsupported(f.path(), ": tensor '", t.name, "' has type ", info.name, " (the towers read F32, F16, BF16, Q8_0)");
    TensorView v;
    v.name = *tower;
    v.dtype = *info.dtype;
    v.shape.assign(t.ne.rbegin(), t.ne.rend());
    v.data = t.data;
    v.nbytes = t.nbytes;
    v.file = f.path();
    const bool floats = v.dtype != DType::Q8_0;
    if (v.name == kPatchEmbd) {
      // conv2d [H, 3, p, p] -> [H, p * p * 3] with (row, col, channel) inside a patch.
      if (v.shape.size() != 4 || v.shape[1] != 3 || v.shape[2] != v.shape[3] || !floats)
        fail_model_file(f.path(), ": tensor '", t.name, "' must be an F32/F16/BF16 conv2d kernel {p, p, 3, hidden}");
      const std::int64_t H = v.shape[0], p = v.shape[2];
      auto buf = std::make_unique<std::vector<float>>(static_cast<std::size_t>(H * p * p * 3));
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t c = 0; c < 3; ++c)
          for (std::int64_t r = 0; r < p; ++r)
            for (std::int64_t col = 0; col < p; ++col)
              (*buf)[static_cast<std::size_t>(h * p * p * 3 + (r * p + col) * 3 + c)] =
                  read_float(t, ((h * 3 + c) * p + r) * p + col);
      v = TensorView{v.name, DType::F32, {H, p * p * 3}, reinterpret_cast<const std::uint8_t*>(buf->data()),
                     buf->size() * 4, f.path()};
      owned_.push_back(std::move(buf));
    } else if (v.name.ends_with(".self_attn.per_dim_scale")) {
      if (v.shape.size() != 1 || !floats)
        fail_model_file(f.path(), ": tensor '", t.name, "' must be an F32/F16/BF16 vector");
      auto buf = std::make_unique<std::vector<float>>(static_cast<std::size_t>(v.shape[0]));
      for (std::int64_t i = 0; i < v.shape[0]; ++i) {
        const double y = read_float(t, i);
        // softplus is positive; a stored value <= 0 cannot have come from the converter.
        if (!(y > 0.0) || !std::isfinite(y))
          fail_model_file(f.path(), ": tensor '", t.name, "' element ", i, " is ", y,
                          " (softplus(per_dim_scale) must be positive and finite)");
        (*buf)[static_cast<std::size_t>(i)] = static_cast<float>(mmproj_softplus_inverse(y));
      }
      v = TensorView{v.name, DType::F32, v.shape, reinterpret_cast<const std::uint8_t*>(buf->data()),
                     buf->size() * 4, f.path()};
      owned_.push_back(std::move(buf));
    } else if (v.name.ends_with(".lconv1d.depthwise_conv1d.weight")) {
      if (v.shape.size() != 2) fail_model_file(f.path(), ": tensor '", t.name, "' must be 2-D {kernel, hidden}");
      v.shape = {v.shape[0], 1, v.shape[1]};
    }
    if (index_.count(v.name)) fail_model_file(f.path(), ": tensor '", t.name, "' appears twice");
    index_.emplace(v.name, views_.size());
    views_.push_back(std::move(v));
  }
}

const TensorView* MmprojSource::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &views_[it->second];
}

std::vector<std::string> MmprojSource::names() const {
  std::vector<std::string> out;
  for (const auto& v : views_) out.push_back(v.name);
  return out;
}

int mmproj_int(const GgufFile& file, const std::string& key, int fallback, int lo, int hi) {
  if (!file.find(key)) {
    if (fallback < lo) fail(file.path(), ": metadata key ", key, " is missing");
    return fallback;
  }
  const std::int64_t v = file.get_int(key);
  if (v < lo || v > hi) fail(file.path(), ": metadata key ", key, " is ", v, ", expected ", lo, "..", hi);
  return static_cast<int>(v);
}

std::int64_t mmproj_dim(const GgufFile& file, const std::string& tensor, std::size_t axis, std::int64_t lo,
                        std::int64_t hi) {
  const GgufTensorInfo* t = file.find_tensor(tensor);
  if (!t) fail(file.path(), ": tensor ", tensor, " is missing");
  if (t->ne.size() <= axis) fail(file.path(), ": tensor ", tensor, " has ", t->ne.size(), " dimensions, expected more than ", axis);
  if (t->ne[axis] < lo || t->ne[axis] > hi) fail(file.path(), ": tensor ", tensor, " has ne[", axis, "] = ", t->ne[axis]);
  return t->ne[axis];
}

}  // namespace ringlm::io
