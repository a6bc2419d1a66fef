// `ringlm make-test-model`: writes a random-weight Gemma 4 checkpoint in the Hugging Face
// layout (see model/testing/test_checkpoint.h), with switches for the layout variants the
// loader must accept.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/progress_display.h"
#include "model/testing/test_checkpoint.h"
#include "util/error.h"
#include "audio/testing/test_audio_tower.h"
#include "vision/testing/test_vision_tower.h"

RINGLM_COMMAND(make_test_model) {
  struct Options {
    std::string out, preset = "tiny", dtype = "bf16", prefix = "model.language_model.", tokenizer;
    std::uint64_t seed = 1;
    int shards = 1;
    bool flat = false, shared_kv = false, no_vision = false, no_audio = false, towers_only = false, qat = false;
  };
  auto opt = std::make_shared<Options>();
  auto* sub = app.add_subcommand("make-test-model", "Write a random-weight Gemma 4 checkpoint (HF layout)");
  sub->footer("Example:\n  ringlm make-test-model /tmp/tiny --preset tiny --seed 1");
  sub->add_option("out", opt->out, "Output directory")->required();
  sub->add_option("--preset", opt->preset, "tiny | tiny-gqa | demo | e2b | e4b")->capture_default_str();
  sub->add_option("--seed", opt->seed, "Random seed")->capture_default_str();
  sub->add_option("--dtype", opt->dtype, "bf16 | f16 | f32")->capture_default_str();
  sub->add_option("--shards", opt->shards, "Number of safetensors shards")->capture_default_str();
  sub->add_flag("--flat-config", opt->flat, "Text config at the top level of config.json (text-only layout)");
  sub->add_option("--prefix", opt->prefix, "Tensor name prefix")->capture_default_str();
  sub->add_flag("--qat", opt->qat,
                "Weights like a QAT checkpoint: the matrices q4_0 quantizes lie exactly on an int4 lattice with bf16 "
                "block scales (codes in [-8,7] and in [-7,7], +7 extremes, scales below fp16's normal range), "
                "stored as float32");
  sub->add_flag("--with-shared-kv", opt->shared_kv, "Also store the unused k/v/k_norm of KV-shared layers");
  sub->add_option("--tokenizer", opt->tokenizer, "Directory with the Gemma 4 tokenizer files");
  sub->add_flag("--no-vision", opt->no_vision,
                "Omit the vision tower (written by default: tiny for tiny presets, full size for e2b/e4b)");
  sub->add_flag("--no-audio", opt->no_audio,
                "Omit the audio tower (written by default: tiny for tiny presets, full size for e2b/e4b)");
  sub->add_flag("--towers-only", opt->towers_only,
                "Write only config.json, processor_config.json and the vision/audio towers (no text decoder, no "
                "tokenizer): for `encode` on full-size towers without the multi-GB text weights");
  sub->callback([opt] {
    ringlm::cli::show_progress(0.0);  // a bar on a terminal, a line per shard otherwise
    using namespace ringlm;
    model::testing::TestCheckpointOptions o;
    o.preset = opt->preset;
    o.seed = opt->seed;
    if (opt->dtype == "bf16") o.dtype = io::DType::BF16;
    else if (opt->dtype == "f16") o.dtype = io::DType::F16;
    else if (opt->dtype == "f32") o.dtype = io::DType::F32;
    else fail("make-test-model: --dtype must be bf16, f16 or f32, got '", opt->dtype, "'");
    o.shards = opt->shards;
    o.flat_config = opt->flat;
    o.prefix = opt->prefix;
    o.with_shared_kv = opt->shared_kv;
    o.qat = opt->qat;
    o.tokenizer_dir = opt->tokenizer.empty() ? std::filesystem::path(RINGLM_TOKENIZER_DIR)
                                             : std::filesystem::path(opt->tokenizer);
    const auto t0 = std::chrono::steady_clock::now();
    // The towers are stored in the same safetensors file(s) as the text decoder; the
    // text-only layout (--flat-config) has no place for them.
    const bool vision = !opt->no_vision && !opt->flat;
    const bool audio = !opt->no_audio && !opt->flat;
    const std::string tower = o.preset == "e2b" || o.preset == "e4b" ? "full" : "tiny";
    if (vision || audio) {
      const int text_hidden =
          nlohmann::json::parse(model::testing::test_checkpoint_config_json(o))["text_config"]["hidden_size"].get<int>();
      if (vision) o.extra_tensors = vision::testing::test_vision_tensors(tower, text_hidden, o.dtype);
      if (audio)
        for (auto& spec : audio::testing::test_audio_tensors(tower, text_hidden, o.dtype))
          o.extra_tensors.push_back(std::move(spec));
      o.extra_filler = [tower, text_hidden, seed = o.seed](const io::TensorSpec& spec, const auto& write) {
        if (spec.name.starts_with("model.audio_tower.") || spec.name.starts_with("model.embed_audio."))
          audio::testing::fill_test_audio_tensor(tower, text_hidden, seed, spec, write);
        else
          vision::testing::fill_test_vision_tensor(tower, text_hidden, seed, spec, write);
      };
    }
    if (opt->towers_only) {
      if (!vision && !audio) fail("make-test-model: --towers-only with no tower to write");
      std::filesystem::create_directories(opt->out);
      std::ofstream(std::filesystem::path(opt->out) / "config.json") << model::testing::test_checkpoint_config_json(o);
      io::write_safetensors(std::filesystem::path(opt->out) / "model.safetensors", o.extra_tensors, o.extra_filler);
    } else {
      model::testing::write_test_checkpoint(opt->out, o);
    }
    if (vision) vision::testing::write_test_vision_config(opt->out, tower);
    if (audio) audio::testing::write_test_audio_config(opt->out, tower);
    std::fprintf(stderr, "make-test-model: wrote %s (%s, seed %llu) in %.1f s\n", opt->out.c_str(), o.preset.c_str(),
                 static_cast<unsigned long long>(o.seed),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  });
}
