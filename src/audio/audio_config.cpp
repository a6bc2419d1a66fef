#include "audio/audio_config.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/config_fields.h"
#include "io/gguf_reader.h"
#include "io/mmproj.h"
#include "util/error.h"

namespace ringlm::audio {
namespace {

using json = nlohmann::json;

using Reader = io::ConfigFields;

json parse_json(const std::string& text, const std::string& source) { return io::parse_config_json(text, source); }
std::string read_file(const std::filesystem::path& p) { return io::read_config_file(p); }

void parse_feature_extractor(AudioConfig& c, const json& pdoc, const std::string& psource) {
  const bool nested = pdoc.contains("feature_extractor") && pdoc["feature_extractor"].is_object();
  const json& fe = nested ? pdoc["feature_extractor"] : pdoc;
  const Reader p{fe, psource, nested ? "feature_extractor." : ""};
  if (p.has("feature_extractor_type") &&
      (!fe["feature_extractor_type"].is_string() ||
       fe["feature_extractor_type"].get<std::string>() != "Gemma4AudioFeatureExtractor"))
    p.bad("feature_extractor_type", "only Gemma4AudioFeatureExtractor is supported, got " +
                                        fe["feature_extractor_type"].dump());
  c.feature_size = p.integer("feature_size", c.feature_size, 1, 4096);
  c.sampling_rate = p.integer("sampling_rate", c.sampling_rate, 1000, 384000);
  // transformers derives the frame sizes from the *_ms fields (defaults 20 and 10 ms) and
  // overwrites any stored frame_length/hop_length/fft_length with them; a stored value that
  // disagrees means a configuration we cannot be sure of, so it is refused.
  const double frame_ms = p.number("frame_length_ms", 20.0, 1.0, 1000.0);
  const double hop_ms = p.number("hop_length_ms", 10.0, 1.0, 1000.0);
  c.frame_length = static_cast<int>(std::lround(c.sampling_rate * frame_ms / 1000.0));
  c.hop_length = static_cast<int>(std::lround(c.sampling_rate * hop_ms / 1000.0));
  if (c.frame_length < 2 || c.hop_length < 1) p.bad("frame_length_ms", "gives a frame shorter than 2 samples");
  c.fft_length = 1;
  while (c.fft_length < c.frame_length) c.fft_length *= 2;
  if (p.boolean("fft_overdrive", false)) c.fft_length *= 2;
  if (p.integer("frame_length", c.frame_length, 0, 1 << 20) != c.frame_length)
    p.bad("frame_length", "disagrees with frame_length_ms (" + std::to_string(c.frame_length) + " samples)");
  if (p.integer("hop_length", c.hop_length, 0, 1 << 20) != c.hop_length)
    p.bad("hop_length", "disagrees with hop_length_ms (" + std::to_string(c.hop_length) + " samples)");
  if (p.integer("fft_length", c.fft_length, 0, 1 << 22) != c.fft_length)
    p.bad("fft_length", "disagrees with the frame length (" + std::to_string(c.fft_length) + ")");
  c.min_frequency = p.number("min_frequency", c.min_frequency, 0.0, 1e6);
  c.max_frequency = p.number("max_frequency", c.max_frequency, 0.0, 1e6);
  if (!(c.min_frequency < c.max_frequency) || c.max_frequency > c.sampling_rate / 2.0)
    p.bad("max_frequency", "must lie above min_frequency and at most at half the sampling rate");
  c.preemphasis = p.number("preemphasis", c.preemphasis, 0.0, 1.0);
  c.preemphasis_htk_flavor = p.boolean("preemphasis_htk_flavor", c.preemphasis_htk_flavor);
  if (p.number("dither", 0.0, 0.0, 1.0) != 0.0)
    p.bad("dither", "only 0 is supported (dithering adds unseeded random noise to every frame)");
  c.input_scale_factor = p.number("input_scale_factor", c.input_scale_factor, 1e-12, 1e12);
  c.mel_floor = p.number("mel_floor", c.mel_floor, 0.0, 1e6);
  c.per_bin_mean = p.numbers("per_bin_mean", static_cast<std::size_t>(c.feature_size));
  c.per_bin_stddev = p.numbers("per_bin_stddev", static_cast<std::size_t>(c.feature_size));
  for (double s : c.per_bin_stddev)
    if (s == 0.0) p.bad("per_bin_stddev", "has a zero");
  if (p.has("max_length")) c.max_samples = p.integer("max_length", 480000, 1, 1 << 30);
  if (p.has("padding_side") && (!fe["padding_side"].is_string() || fe["padding_side"].get<std::string>() != "right"))
    p.bad("padding_side", "only \"right\" is supported");
  const Reader top{pdoc, psource, ""};
  if (nested) c.audio_seq_length = top.integer("audio_seq_length", c.audio_seq_length, 1, 1 << 20);
  if (nested && top.integer("audio_ms_per_token", 40, 1, 1 << 20) != 40)
    top.bad("audio_ms_per_token", "only 40 (two stride-2 convolutions over 10 ms frames) is supported");
}

}  // namespace

int AudioConfig::mel_frames_for(long long samples) const {
  // A frame is valid when its whole (frame_length + 1)-sample window, after frame_length / 2
  // leading zeros, is audio (Gemma4AudioFeatureExtractor's mask).
  const long long span = samples + frame_length / 2 - (frame_length + 1);
  if (span < 0) return 0;
  return static_cast<int>(span / hop_length + 1);
}

int AudioConfig::soft_tokens_for(long long samples) const {
  int t = mel_frames_for(samples);
  for (int i = 0; i < 2; ++i) t = (t + 1) / 2;
  return t;
}

std::optional<AudioConfig> parse_audio_config(const std::string& config_json, const std::string& source,
                                              const std::string& processor_json,
                                              const std::string& processor_source) {
  const json doc = parse_json(config_json, source);
  if (!doc.is_object()) fail(source, ": not a JSON object");
  if (!doc.contains("audio_config") || doc["audio_config"].is_null()) return std::nullopt;
  const json& aj = doc["audio_config"];
  if (!aj.is_object()) fail(source, ": field audio_config: expected an object");

  AudioConfig c;
  c.source = source;
  const Reader a{aj, source, "audio_config."};
  c.hidden_size = a.integer("hidden_size", c.hidden_size, 1, 1 << 16);
  c.num_layers = a.integer("num_hidden_layers", c.num_layers, 1, 1024);
  c.num_heads = a.integer("num_attention_heads", c.num_heads, 1, 1024);
  if (c.hidden_size % c.num_heads != 0)
    a.bad("num_attention_heads", "must divide hidden_size (" + std::to_string(c.hidden_size) + ")");
  if (a.has("hidden_act") && (!aj["hidden_act"].is_string() || aj["hidden_act"].get<std::string>() != "silu"))
    a.bad("hidden_act", "only silu is supported, got " + aj["hidden_act"].dump());
  if (a.has("subsampling_conv_channels")) {
    const json& ch = aj["subsampling_conv_channels"];
    if (!ch.is_array() || ch.size() != 2 || !ch[0].is_number_integer() || !ch[1].is_number_integer() ||
        ch[0].get<long long>() < 1 || ch[1].get<long long>() < 1 || ch[0].get<long long>() > 4096 ||
        ch[1].get<long long>() > 4096)
      a.bad("subsampling_conv_channels", "expected two positive integers, got " + ch.dump());
    c.subsampling_channels[0] = ch[0].get<int>();
    c.subsampling_channels[1] = ch[1].get<int>();
  }
  c.conv_kernel_size = a.integer("conv_kernel_size", c.conv_kernel_size, 1, 1024);
  c.residual_weight = a.number("residual_weight", c.residual_weight, -1e6, 1e6);
  c.attention_chunk_size = a.integer("attention_chunk_size", c.attention_chunk_size, 1, 1 << 16);
  c.attention_context_left = a.integer("attention_context_left", c.attention_context_left, 1, 1 << 16);
  c.attention_context_right = a.integer("attention_context_right", c.attention_context_right, 0, 1 << 16);
  // transformers' relative position table is fixed at distances 12..0 (arange(12, -1, -1)),
  // which is only right for a left context of 13 and no right context.
  if (c.attention_context_left != 13) a.bad("attention_context_left", "only 13 is supported (as in transformers)");
  if (c.attention_context_right != 0) a.bad("attention_context_right", "only 0 is supported (as in transformers)");
  c.attention_logit_cap = a.number("attention_logit_cap", c.attention_logit_cap, 1e-6, 1e12);
  c.use_clipped_linears = a.boolean("use_clipped_linears", c.use_clipped_linears);
  c.rms_norm_eps = a.number("rms_norm_eps", c.rms_norm_eps, 0.0, 1.0);
  c.gradient_clipping = a.number("gradient_clipping", c.gradient_clipping, 1e-6, 1e300);
  c.output_proj_dims = a.integer("output_proj_dims", c.output_proj_dims, 1, 1 << 16);
  if (c.hidden_size % 2 != 0) a.bad("hidden_size", "must be even (sine and cosine position halves)");

  const Reader top{doc, source, ""};
  c.audio_token_id = top.integer("audio_token_id", c.audio_token_id, 0, 1 << 30);
  c.boa_token_id = top.integer("boa_token_id", c.boa_token_id, 0, 1 << 30);
  c.eoa_token_id = top.integer("eoa_token_index", c.eoa_token_id, 0, 1 << 30);
  c.eoa_token_id = top.integer("eoa_token_id", c.eoa_token_id, 0, 1 << 30);
  if (!doc.contains("text_config") || !doc["text_config"].is_object())
    fail(source, ": field text_config: missing (a checkpoint with an audio_config needs one)");
  const Reader t{doc["text_config"], source, "text_config."};
  if (!t.has("hidden_size")) t.bad("hidden_size", "missing");
  c.text_hidden_size = t.integer("hidden_size", 0, 1, 1 << 16);

  if (!processor_json.empty()) {
    const json pdoc = parse_json(processor_json, processor_source);
    if (!pdoc.is_object()) fail(processor_source, ": not a JSON object");
    parse_feature_extractor(c, pdoc, processor_source);
  }
  return c;
}

std::optional<AudioConfig> load_audio_config(const std::filesystem::path& dir) {
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
  return parse_audio_config(read_file(cfg), cfg.string(), proc_text, proc_source);
}

namespace {

double mm_number(const io::GgufFile& f, const std::string& key, double fallback, double lo, double hi) {
  const double v = f.get_float_or(key, fallback);
  if (!(v >= lo && v <= hi)) fail(f.path(), ": metadata key ", key, " is ", v, ", expected ", lo, "..", hi);
  return v;
}

}  // namespace

std::optional<AudioConfig> audio_config_from_mmproj(const io::GgufFile& f) {
  if (io::mmproj_projector(f, "audio") != "gemma4a" || !f.get_bool_or("clip.has_audio_encoder", true))
    return std::nullopt;
  AudioConfig c;
  c.source = f.path();
  c.hidden_size = io::mmproj_int(f, "clip.audio.embedding_length", -1, 2, 1 << 16);
  c.num_layers = io::mmproj_int(f, "clip.audio.block_count", -1, 1, 1024);
  c.num_heads = io::mmproj_int(f, "clip.audio.attention.head_count", -1, 1, 1024);
  c.text_hidden_size = io::mmproj_int(f, "clip.audio.projection_dim", -1, 1, 1 << 16);
  c.feature_size = io::mmproj_int(f, "clip.audio.num_mel_bins", 128, 1, 4096);
  if (c.hidden_size % c.num_heads != 0 || c.hidden_size % 2 != 0)
    fail(f.path(), ": metadata key clip.audio.attention.head_count (", c.num_heads,
         ") must divide clip.audio.embedding_length (", c.hidden_size, "), which must be even");
  if (f.find("clip.audio.feed_forward_length") &&
      io::mmproj_int(f, "clip.audio.feed_forward_length", 0, 0, 1 << 20) != 4 * c.hidden_size)
    fail(f.path(), ": metadata key clip.audio.feed_forward_length must be 4 x clip.audio.embedding_length (",
         4 * c.hidden_size, ")");
  // llama.cpp ignores the stored epsilon (its converter wrote a wrong one) and uses 1e-6,
  // the value of every Gemma 4 audio tower; ringlm's writer stores the right one as its own key.
  c.rms_norm_eps = mm_number(f, "ringlm.audio.rms_norm_eps", 1e-6, 0.0, 1.0);
  c.gradient_clipping = mm_number(f, "ringlm.audio.gradient_clipping", c.gradient_clipping, 1e-6, 1e300);
  c.residual_weight = mm_number(f, "ringlm.audio.residual_weight", c.residual_weight, -1e6, 1e6);
  c.attention_logit_cap = mm_number(f, "ringlm.audio.attention_logit_cap", c.attention_logit_cap, 1e-6, 1e12);
  c.attention_chunk_size = io::mmproj_int(f, "ringlm.audio.attention_chunk_size", c.attention_chunk_size, 1, 1 << 16);
  c.subsampling_channels[0] = static_cast<int>(io::mmproj_dim(f, "a.conv1d.0.weight", 3, 1, 1 << 16));
  c.subsampling_channels[1] = static_cast<int>(io::mmproj_dim(f, "a.conv1d.1.weight", 3, 1, 1 << 16));
  c.conv_kernel_size = static_cast<int>(io::mmproj_dim(f, "a.blk.0.conv_dw.weight", 0, 1, 1 << 16));
  c.output_proj_dims = static_cast<int>(io::mmproj_dim(f, "a.pre_encode.out.weight", 1, 1, 1 << 16));
  c.use_clipped_linears = f.find_tensor("a.blk.0.attn_q.input_min") != nullptr;
  c.checkpoint_dtype = io::DType::BF16;  // the released checkpoints' dtype
  if (f.find("ringlm.audio.checkpoint_dtype")) {
    const auto d = f.get_string("ringlm.audio.checkpoint_dtype");
    if (d == "F16") c.checkpoint_dtype = io::DType::F16;
    else if (d == "F32") c.checkpoint_dtype = io::DType::F32;
    else if (d != "BF16") fail(f.path(), ": metadata key ringlm.audio.checkpoint_dtype is '", d, "', expected F32, F16 or BF16");
  }
  c.audio_token_id = io::mmproj_int(f, "ringlm.audio.audio_token_id", c.audio_token_id, 0, 1 << 30);
  c.boa_token_id = io::mmproj_int(f, "ringlm.audio.boa_token_id", c.boa_token_id, 0, 1 << 30);
  c.eoa_token_id = io::mmproj_int(f, "ringlm.audio.eoa_token_id", c.eoa_token_id, 0, 1 << 30);
  return c;
}

}  // namespace ringlm::audio
