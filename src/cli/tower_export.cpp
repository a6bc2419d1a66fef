#include "cli/tower_export.h"

#include <cctype>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "audio/audio_config.h"
#include "audio/audio_weights.h"
#include "io/gguf_writer.h"
#include "io/mmproj.h"
#include "io/packed_towers.h"
#include "io/safetensors.h"
#include "kernels/dequant_ggml.h"
#include "util/error.h"
#include "vision/vision_config.h"
#include "vision/vision_weights.h"

namespace ringlm::cli {
namespace {

namespace fs = std::filesystem;

constexpr char kPatchEmbd[] = "vision_tower.patch_embedder.input_proj.weight";

// The towers of a checkpoint, bound (shape-checked) exactly as the encoders bind them.
struct Towers {
  std::optional<vision::VisionConfig> vc;
  std::optional<audio::AudioConfig> ac;
  std::unique_ptr<io::SafetensorsSource> src;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> tensors;  // tower names, shapes
  io::DType checkpoint_dtype = io::DType::BF16;
};

Towers open_towers(const fs::path& dir) {
  Towers t;
  t.vc = vision::load_vision_config(dir);
  t.ac = audio::load_audio_config(dir);
  if (!t.vc && !t.ac) return t;
  t.src = std::make_unique<io::SafetensorsSource>(dir, io::TensorSet::Towers);
  if (t.vc) {
    vision::bind_vision_weights(*t.vc, *t.src);
    for (const auto& s : vision::vision_tensor_shapes(*t.vc)) t.tensors.emplace_back(s.name, s.shape);
  }
  if (t.ac) {
    audio::bind_audio_weights(*t.ac, *t.src);
    for (const auto& s : audio::audio_tensor_shapes(*t.ac)) t.tensors.emplace_back(s.name, s.shape);
  }
  // The dtype of the checkpoint's matrices: the audio clamps depend on it (audio_config.h).
  const io::TensorView* first = t.src->find(t.tensors.front().first);
  if (t.ac) first = t.src->find("audio_tower.layers.0.self_attn.q_proj.linear.weight");
  if (first && first->dtype != io::DType::Q8_0) t.checkpoint_dtype = first->dtype;
  return t;
}

bool is_vector(const std::vector<std::int64_t>& shape) {
  std::int64_t big = 0;
  for (auto d : shape) big += d > 1;
  return big <= 1;
}

// The stored type of one tower tensor (see tower_export.h).
io::DType storage_type(const std::string& name, const std::vector<std::int64_t>& shape, io::DType matrix_type,
                       bool gguf, TowerExportResult& r) {
  if (is_vector(shape) || name.ends_with("position_embedding_table") || name.ends_with(".conv.weight") ||
      name.ends_with("depthwise_conv1d.weight"))
    return io::DType::F32;
  // llama.cpp runs the patch embedding as a conv2d, which takes f16 or f32 kernels only.
  if (gguf && name == kPatchEmbd) return matrix_type == io::DType::F16 ? io::DType::F16 : io::DType::F32;
  if (matrix_type == io::DType::Q8_0 && shape.back() % 32 != 0) {
    ++r.fallback_f16;
    return io::DType::F16;
  }
  ++r.matrices;
  return matrix_type;
}

std::vector<float> load_f32(const io::TensorView& v) {
  std::vector<float> out(static_cast<std::size_t>(v.numel()));
  kernels::dequantize_row(v.dtype, v.data, out.data(), v.numel());
  return out;
}

// Encodes `x` as rows of `cols` values of `type`.
void encode_rows(const std::vector<float>& x, std::int64_t cols, io::DType type, std::uint8_t* dst) {
  const std::int64_t rows = static_cast<std::int64_t>(x.size()) / cols, rb = kernels::row_bytes(type, cols);
  for (std::int64_t r = 0; r < rows; ++r) kernels::quantize_row(type, x.data() + r * cols, dst + r * rb, cols);
}

std::int64_t patch_side(const std::vector<std::int64_t>& shape) {
  return static_cast<std::int64_t>(std::llround(std::sqrt(static_cast<double>(shape[1]) / 3.0)));
}

// The ggml shape llama.cpp stores a tower tensor with (io/mmproj.h).
std::vector<std::int64_t> gguf_ne(const std::string& name, const std::vector<std::int64_t>& shape) {
  if (name == kPatchEmbd) return {patch_side(shape), patch_side(shape), 3, shape[0]};
  if (name.ends_with("depthwise_conv1d.weight")) return {shape[2], shape[0]};
  std::vector<std::int64_t> ne(shape.rbegin(), shape.rend());
  if (ne.empty()) ne = {1};
  return ne;
}

// The tensor's values re-laid as llama.cpp stores them.
std::vector<float> gguf_layout(const std::string& name, std::vector<float> x, const std::vector<std::int64_t>& shape) {
  if (name == kPatchEmbd) {
    const std::int64_t H = shape[0], p = patch_side(shape);
    std::vector<float> y(x.size());
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t c = 0; c < 3; ++c)
        for (std::int64_t r = 0; r < p; ++r)
          for (std::int64_t col = 0; col < p; ++col)
            y[static_cast<std::size_t>(((h * 3 + c) * p + r) * p + col)] =
                x[static_cast<std::size_t>(h * p * p * 3 + (r * p + col) * 3 + c)];
    return y;
  }
  if (name.ends_with(".self_attn.per_dim_scale"))
    for (float& v : x) v = static_cast<float>(io::mmproj_softplus(v));
  return x;
}

void check_mmproj_processor(const Towers& t, const fs::path& dir) {
  // llama.cpp hard-codes Gemma 4's processor; settings it cannot carry must not be dropped.
  if (t.vc && (!t.vc->do_resize || t.vc->rescale_factor != 1.0 / 255.0))
    fail(dir.string(), ": the image processor's do_resize / rescale_factor differ from Gemma 4's; an mmproj "
         "file cannot carry them");
  if (t.ac) {
    const audio::AudioConfig d;
    const audio::AudioConfig& a = *t.ac;
    if (a.sampling_rate != d.sampling_rate || a.frame_length != d.frame_length || a.hop_length != d.hop_length ||
        a.fft_length != d.fft_length || a.min_frequency != d.min_frequency || a.max_frequency != d.max_frequency ||
        a.preemphasis != d.preemphasis || a.input_scale_factor != d.input_scale_factor || a.mel_floor != d.mel_floor ||
        !a.per_bin_mean.empty() || !a.per_bin_stddev.empty() || a.attention_context_left != d.attention_context_left)
      fail(dir.string(), ": the audio feature extractor's settings differ from Gemma 4's defaults; an mmproj file "
           "cannot carry them (llama.cpp hard-codes 16 kHz, 20/10 ms frames, 512-point FFT, 0-8 kHz)");
  }
}

void write_mmproj_metadata(io::GgufWriter& w, const Towers& t, io::DType matrix_type) {
  w.add_string("general.architecture", "clip");
  w.add_string("general.type", "mmproj");
  w.add_string("general.name", "gemma4 towers (ringlm convert)");
  // llama.cpp's file types: 1 mostly F16, 7 mostly Q8_0, 32 mostly BF16.
  w.add_u32("general.file_type", matrix_type == io::DType::Q8_0 ? 7 : matrix_type == io::DType::BF16 ? 32 : 1);
  if (matrix_type == io::DType::Q8_0) w.add_u32("general.quantization_version", 2);
  w.add_bool("clip.has_vision_encoder", t.vc.has_value());
  w.add_bool("clip.has_audio_encoder", t.ac.has_value());
  if (t.vc) {
    const vision::VisionConfig& c = *t.vc;
    w.add_string("clip.vision.projector_type", "gemma4v");
    w.add_u32("clip.vision.image_size", 224);  // unused by gemma4v; llama.cpp requires the key
    w.add_u32("clip.vision.patch_size", static_cast<std::uint32_t>(c.patch_size));
    w.add_u32("clip.vision.embedding_length", static_cast<std::uint32_t>(c.hidden_size));
    w.add_u32("clip.vision.feed_forward_length", static_cast<std::uint32_t>(c.intermediate_size));
    w.add_u32("clip.vision.block_count", static_cast<std::uint32_t>(c.num_layers));
    w.add_u32("clip.vision.attention.head_count", static_cast<std::uint32_t>(c.num_heads));
    w.add_u32("clip.vision.attention.head_count_kv", static_cast<std::uint32_t>(c.num_kv_heads));
    w.add_u32("clip.vision.projection_dim", static_cast<std::uint32_t>(c.text_hidden_size));
    w.add_u32("clip.vision.projector.scale_factor", static_cast<std::uint32_t>(c.pooling_kernel_size));
    w.add_f32("clip.vision.attention.layer_norm_epsilon", static_cast<float>(c.rms_norm_eps));
    const float mean[3] = {0, 0, 0}, stdv[3] = {1, 1, 1};
    w.add_array_f32("clip.vision.image_mean", mean);
    w.add_array_f32("clip.vision.image_std", stdv);
    w.add_f64("ringlm.vision.rope_theta", c.rope_theta);
    w.add_u32("ringlm.vision.default_soft_tokens", static_cast<std::uint32_t>(c.default_soft_tokens));
    w.add_u32("ringlm.vision.image_token_id", static_cast<std::uint32_t>(c.image_token_id));
    w.add_u32("ringlm.vision.boi_token_id", static_cast<std::uint32_t>(c.boi_token_id));
    w.add_u32("ringlm.vision.eoi_token_id", static_cast<std::uint32_t>(c.eoi_token_id));
  }
  if (t.ac) {
    const audio::AudioConfig& c = *t.ac;
    w.add_string("clip.audio.projector_type", "gemma4a");
    w.add_u32("clip.audio.embedding_length", static_cast<std::uint32_t>(c.hidden_size));
    w.add_u32("clip.audio.feed_forward_length", static_cast<std::uint32_t>(4 * c.hidden_size));
    w.add_u32("clip.audio.block_count", static_cast<std::uint32_t>(c.num_layers));
    w.add_u32("clip.audio.attention.head_count", static_cast<std::uint32_t>(c.num_heads));
    w.add_u32("clip.audio.projection_dim", static_cast<std::uint32_t>(c.text_hidden_size));
    w.add_u32("clip.audio.num_mel_bins", static_cast<std::uint32_t>(c.feature_size));
    w.add_f32("clip.audio.attention.layer_norm_epsilon", static_cast<float>(c.rms_norm_eps));
    w.add_f64("ringlm.audio.rms_norm_eps", c.rms_norm_eps);
    w.add_f64("ringlm.audio.gradient_clipping", c.gradient_clipping);
    w.add_f64("ringlm.audio.residual_weight", c.residual_weight);
    w.add_f64("ringlm.audio.attention_logit_cap", c.attention_logit_cap);
    w.add_u32("ringlm.audio.attention_chunk_size", static_cast<std::uint32_t>(c.attention_chunk_size));
    w.add_string("ringlm.audio.checkpoint_dtype", io::dtype_name(t.checkpoint_dtype));
    w.add_u32("ringlm.audio.audio_token_id", static_cast<std::uint32_t>(c.audio_token_id));
    w.add_u32("ringlm.audio.boa_token_id", static_cast<std::uint32_t>(c.boa_token_id));
    w.add_u32("ringlm.audio.eoa_token_id", static_cast<std::uint32_t>(c.eoa_token_id));
  }
}

}  // namespace

io::DType parse_tower_type(const std::string& type) {
  std::string t = type;
  for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t == "f16") return io::DType::F16;
  if (t == "q8_0") return io::DType::Q8_0;
  if (t == "bf16") return io::DType::BF16;
  fail("--tower-type ", type, ": expected f16, bf16 or q8_0");
}

TowerExportResult export_packed_towers(const fs::path& hf_dir, const fs::path& out_dir, io::DType matrix_type) {
  TowerExportResult r;
  const Towers t = open_towers(hf_dir);
  std::error_code ec;
  if (!t.src) {
    fs::remove(out_dir / io::kPackedTowersFile, ec);  // a previous conversion's towers are not this model's
    return r;
  }
  for (const char* name : {"processor_config.json", "preprocessor_config.json"})
    if (fs::is_regular_file(hf_dir / name, ec)) fs::copy_file(hf_dir / name, out_dir / name, fs::copy_options::overwrite_existing);
  std::vector<io::TowerTensorOut> out;
  for (const auto& [name, shape] : t.tensors) {
    const io::TensorView* v = t.src->find(name);
    const io::DType type = storage_type(name, shape, matrix_type, false, r);
    // The clip bounds are 0-d in the checkpoint; stored as [1] like every other source.
    const std::vector<std::int64_t> stored = shape.empty() ? std::vector<std::int64_t>{1} : shape;
    out.push_back({name, type, stored, [v, type, stored](std::uint8_t* dst) {
                     encode_rows(load_f32(*v), stored.back(), type, dst);
                   }});
    r.bytes += *io::tower_tensor_bytes(type, stored);
  }
  io::write_packed_towers(out_dir / io::kPackedTowersFile, out, t.checkpoint_dtype);
  r.vision = t.vc.has_value();
  r.audio = t.ac.has_value();
  r.tensors = static_cast<int>(out.size());
  return r;
}

TowerExportResult export_mmproj(const fs::path& hf_dir, const fs::path& out, io::DType matrix_type) {
  TowerExportResult r;
  const Towers t = open_towers(hf_dir);
  if (!t.src)
    fail(hf_dir.string(), ": --mmproj-out: this checkpoint has no vision or audio tower (config.json has neither "
         "vision_config nor audio_config): it is text only");
  check_mmproj_processor(t, hf_dir);
  io::GgufWriter w(32);
  write_mmproj_metadata(w, t, matrix_type);
  for (const auto& [name, shape] : t.tensors) {
    const io::TensorView* v = t.src->find(name);
    const auto gguf_name = io::mmproj_gguf_name(name);
    if (!gguf_name) fail_internal("mmproj: no GGUF name for tower tensor ", name);
    const io::DType type = storage_type(name, shape, matrix_type, true, r);
    const std::vector<std::int64_t> ne = gguf_ne(name, shape);
    if (name == kPatchEmbd && patch_side(shape) * patch_side(shape) * 3 != shape[1])
      fail(hf_dir.string(), ": tensor ", name, ": width ", shape[1], " is not 3 x patch^2");
    w.add_tensor_lazy(*gguf_name, io::ggml_type_of(type), ne, [v, name, shape, type, ne](std::uint8_t* dst) {
      encode_rows(gguf_layout(name, load_f32(*v), shape), ne[0], type, dst);
    });
    r.bytes += *io::tower_tensor_bytes(type, std::vector<std::int64_t>(ne.rbegin(), ne.rend()));
    ++r.tensors;
  }
  w.write(out);
  r.vision = t.vc.has_value();
  r.audio = t.ac.has_value();
  return r;
}

}  // namespace ringlm::cli
