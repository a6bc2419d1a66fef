#include "vision/vision_config.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/config_fields.h"
#include "io/gguf_reader.h"
#include "io/mmproj.h"
#include "util/error.h"

namespace ringlm::vision {
namespace {

using json = nlohmann::json;

using Reader = io::ConfigFields;

json parse_json(const std::string& text, const std::string& source) { return io::parse_config_json(text, source); }
std::string read_file(const std::filesystem::path& p) { return io::read_config_file(p); }

}  // namespace

bool is_soft_token_budget(int n) {
  for (int b : kSoftTokenBudgets)
    if (b == n) return true;
  return false;
}

std::optional<VisionConfig> parse_vision_config(const std::string& config_json, const std::string& source,
                                                const std::string& processor_json,
                                                const std::string& processor_source) {
  const json doc = parse_json(config_json, source);
  if (!doc.is_object()) fail(source, ": not a JSON object");
  if (!doc.contains("vision_config") || doc["vision_config"].is_null()) return std::nullopt;
  const json& vj = doc["vision_config"];
  if (!vj.is_object()) fail(source, ": field vision_config: expected an object");

  VisionConfig c;
  c.source = source;
  const Reader v{vj, source, "vision_config."};
  c.hidden_size = v.integer("hidden_size", c.hidden_size, 1, 1 << 16);
  c.intermediate_size = v.integer("intermediate_size", c.intermediate_size, 1, 1 << 18);
  c.num_layers = v.integer("num_hidden_layers", c.num_layers, 1, 1024);
  c.num_heads = v.integer("num_attention_heads", c.num_heads, 1, 1024);
  c.num_kv_heads = v.integer("num_key_value_heads", c.num_kv_heads, 1, 1024);
  c.head_dim = v.integer("head_dim", c.hidden_size / c.num_heads, 2, 4096);
  c.rms_norm_eps = v.number("rms_norm_eps", c.rms_norm_eps, 0.0, 1.0);
  c.patch_size = v.integer("patch_size", c.patch_size, 1, 256);
  c.pooling_kernel_size = v.integer("pooling_kernel_size", c.pooling_kernel_size, 1, 16);
  c.position_embedding_size = v.integer("position_embedding_size", c.position_embedding_size, 1, 1 << 20);
  c.use_clipped_linears = v.boolean("use_clipped_linears", c.use_clipped_linears);
  c.standardize = v.boolean("standardize", c.standardize);
  if (v.has("rope_parameters")) {
    const json& rp = vj["rope_parameters"];
    if (!rp.is_object()) v.bad("rope_parameters", "expected an object");
    const Reader r{rp, source, "vision_config.rope_parameters."};
    if (r.has("rope_type") && (!rp["rope_type"].is_string() || rp["rope_type"].get<std::string>() != "default"))
      r.bad("rope_type", "only \"default\" is supported, got " + rp["rope_type"].dump());
    c.rope_theta = r.number("rope_theta", c.rope_theta, 1e-6, 1e12);
  }
  if (v.has("hidden_activation") &&
      (!vj["hidden_activation"].is_string() || vj["hidden_activation"].get<std::string>() != "gelu_pytorch_tanh"))
    v.bad("hidden_activation", "only gelu_pytorch_tanh is supported, got " + vj["hidden_activation"].dump());
  if (c.num_heads % c.num_kv_heads != 0)
    v.bad("num_key_value_heads", "must divide num_attention_heads (" + std::to_string(c.num_heads) + ")");
  // The 2D rotary embedding splits each head in an x half and a y half, each rotate-half.
  if (c.head_dim % 4 != 0) v.bad("head_dim", "must be a multiple of 4 (two rotate-half parts), got " + std::to_string(c.head_dim));

  const Reader top{doc, source, ""};
  c.image_token_id = top.integer("image_token_id", c.image_token_id, 0, 1 << 30);
  c.boi_token_id = top.integer("boi_token_id", c.boi_token_id, 0, 1 << 30);
  c.eoi_token_id = top.integer("eoi_token_id", c.eoi_token_id, 0, 1 << 30);
  if (!doc.contains("text_config") || !doc["text_config"].is_object())
    fail(source, ": field text_config: missing (a checkpoint with a vision_config needs one)");
  const Reader t{doc["text_config"], source, "text_config."};
  if (!t.has("hidden_size")) t.bad("hidden_size", "missing");
  c.text_hidden_size = t.integer("hidden_size", 0, 1, 1 << 16);

  if (!processor_json.empty()) {
    const json pdoc = parse_json(processor_json, processor_source);
    if (!pdoc.is_object()) fail(processor_source, ": not a JSON object");
    const bool nested = pdoc.contains("image_processor") && pdoc["image_processor"].is_object();
    const json& ip = nested ? pdoc["image_processor"] : pdoc;
    const Reader p{ip, processor_source, nested ? "image_processor." : ""};
    c.default_soft_tokens = p.integer("max_soft_tokens", c.default_soft_tokens, 1, 1 << 20);
    if (!is_soft_token_budget(c.default_soft_tokens))
      p.bad("max_soft_tokens", "must be one of 70, 140, 280, 560, 1120, got " + std::to_string(c.default_soft_tokens));
    const int ps = p.integer("patch_size", c.patch_size, 1, 256);
    if (ps != c.patch_size) p.bad("patch_size", "disagrees with config.json's vision_config.patch_size");
    const int pk = p.integer("pooling_kernel_size", c.pooling_kernel_size, 1, 16);
    if (pk != c.pooling_kernel_size)
      p.bad("pooling_kernel_size", "disagrees with config.json's vision_config.pooling_kernel_size");
    c.do_resize = p.boolean("do_resize", true);
    if (p.boolean("do_rescale", true)) c.rescale_factor = p.number("rescale_factor", c.rescale_factor, 0.0, 1.0);
    else c.rescale_factor = 1.0;
    if (p.boolean("do_normalize", false)) p.bad("do_normalize", "true is not supported (Gemma 4 uses pixels in [0, 1])");
    if (p.has("resample") && p.integer("resample", 3, 0, 5) != 3)
      p.bad("resample", "only 3 (bicubic) is supported");
  }
  return c;
}

std::optional<VisionConfig> load_vision_config(const std::filesystem::path& dir) {
  const auto cfg = dir / "config.json";
  std::string proc_text, proc_source;
  for (const char* name : {"processor_config.json", "preprocessor_config.json"}) {
    const auto p = dir / name;
    if (std::filesystem::exists(p)) {
      proc_text = read_file(p);
      proc_source = p.string();
      break;
    }
  }
  return parse_vision_config(read_file(cfg), cfg.string(), proc_text, proc_source);
}

std::optional<VisionConfig> vision_config_from_mmproj(const io::GgufFile& f) {
  if (io::mmproj_projector(f, "vision") != "gemma4v" || !f.get_bool_or("clip.has_vision_encoder", true))
    return std::nullopt;
  VisionConfig c;
  c.source = f.path();
  c.hidden_size = io::mmproj_int(f, "clip.vision.embedding_length", -1, 1, 1 << 16);
  c.intermediate_size = io::mmproj_int(f, "clip.vision.feed_forward_length", -1, 1, 1 << 18);
  c.num_layers = io::mmproj_int(f, "clip.vision.block_count", -1, 1, 1024);
  c.num_heads = io::mmproj_int(f, "clip.vision.attention.head_count", -1, 1, 1024);
  c.num_kv_heads = io::mmproj_int(f, "clip.vision.attention.head_count_kv", c.num_heads, 1, 1024);
  c.patch_size = io::mmproj_int(f, "clip.vision.patch_size", -1, 1, 256);
  c.pooling_kernel_size = io::mmproj_int(f, "clip.vision.projector.scale_factor", 3, 1, 16);
  c.text_hidden_size = io::mmproj_int(f, "clip.vision.projection_dim", -1, 1, 1 << 16);
  c.rms_norm_eps = f.get_float_or("clip.vision.attention.layer_norm_epsilon", 1e-6);
  if (!(c.rms_norm_eps >= 0.0 && c.rms_norm_eps <= 1.0))
    fail(f.path(), ": metadata key clip.vision.attention.layer_norm_epsilon is ", c.rms_norm_eps, ", expected 0..1");
  c.rope_theta = f.get_float_or("ringlm.vision.rope_theta", 100.0);
  if (!(c.rope_theta > 0.0)) fail(f.path(), ": metadata key ringlm.vision.rope_theta must be positive");
  c.default_soft_tokens = io::mmproj_int(f, "ringlm.vision.default_soft_tokens", 280, 1, 1 << 20);
  if (!is_soft_token_budget(c.default_soft_tokens))
    fail(f.path(), ": metadata key ringlm.vision.default_soft_tokens must be one of 70, 140, 280, 560, 1120");
  c.image_token_id = io::mmproj_int(f, "ringlm.vision.image_token_id", c.image_token_id, 0, 1 << 30);
  c.boi_token_id = io::mmproj_int(f, "ringlm.vision.boi_token_id", c.boi_token_id, 0, 1 << 30);
  c.eoi_token_id = io::mmproj_int(f, "ringlm.vision.eoi_token_id", c.eoi_token_id, 0, 1 << 30);
  // ringlm's preprocessing rescales to [0, 1] and normalizes nothing (the model maps to
  // [-1, 1] itself); a file asking for another normalization is not this processor.
  for (const char* key : {"clip.vision.image_mean", "clip.vision.image_std"}) {
    if (!f.find(key)) continue;
    const float want = std::string_view(key).ends_with("mean") ? 0.0f : 1.0f;
    for (float v : f.get_array(key).floats(key))
      if (v != want) fail(f.path(), ": metadata key ", key, " has ", v, "; Gemma 4's processor uses mean 0, std 1");
  }
  // What the metadata does not carry, from the tensors.
  c.head_dim = static_cast<int>(io::mmproj_dim(f, "v.blk.0.attn_q_norm.weight", 0));
  c.position_embedding_size = static_cast<int>(io::mmproj_dim(f, "v.position_embd.weight", 1));
  c.use_clipped_linears = f.find_tensor("v.blk.0.attn_q.input_min") != nullptr;
  c.standardize = f.find_tensor("v.std_bias") != nullptr;
  if (c.num_heads % c.num_kv_heads != 0)
    fail(f.path(), ": metadata key clip.vision.attention.head_count_kv (", c.num_kv_heads,
         ") must divide clip.vision.attention.head_count (", c.num_heads, ")");
  if (c.head_dim % 4 != 0 || c.head_dim < 4)
    fail(f.path(), ": tensor v.blk.0.attn_q_norm.weight: head_dim ", c.head_dim, " must be a multiple of 4");
  return c;
}

}  // namespace ringlm::vision
