// `ringlm make-test-model`: writes a random-weight Gemma 4 checkpoint in the Hugging Face
// layout (see model/testing/test_checkpoint.h), with switches for the layout variants the
// loader must accept.
#include <memory>

#include "cli/command.h"
#include "cli/progress_display.h"
#include "cli/test_model_writer.h"

RINGLM_COMMAND(make_test_model) {
  struct Options {
    std::string out;
    ringlm::cli::TestModelSpec spec;
  };
  auto opt = std::make_shared<Options>();
  auto& spec = opt->spec;
  auto* sub = app.add_subcommand("make-test-model", "Write a random-weight Gemma 4 checkpoint (HF layout)");
  sub->footer("Example:\n  ringlm make-test-model /tmp/tiny --preset tiny --seed 1\n  ringlm make-test-model /tmp/tiny-assistant --assistant --preset tiny\n"
              "  ringlm make-test-model /tmp/tiny-assistant.gguf --assistant --preset tiny --dtype q4_0");
  sub->add_option("out", opt->out, "Output directory (with --assistant: or a .gguf file)")->required();
  sub->add_option("--preset", spec.preset,
                  "tiny | tiny-gqa | demo | e2b | e4b; with --assistant: tiny | tiny-dense | micro | demo | e2b")
      ->capture_default_str();
  sub->add_flag("--assistant", spec.assistant,
                "Write a Gemma 4 assistant (multi-token-prediction drafter, docs/speculative.md) instead: tiny fits "
                "the tiny model, e2b has the E2B assistant's shapes; OUT ending in .gguf writes one gemma4-assistant GGUF "
                "file (--dtype f32|f16|bf16|q8_0|q4_0)");
  sub->add_option("--seed", spec.seed, "Random seed")->capture_default_str();
  sub->add_option("--dtype", spec.dtype, "bf16 | f16 | f32 (a GGUF assistant also q8_0 | q4_0)")->capture_default_str();
  sub->add_option("--shards", spec.shards, "Number of safetensors shards")->capture_default_str();
  sub->add_flag("--flat-config", spec.flat, "Text config at the top level of config.json (text-only layout)");
  sub->add_option("--prefix", spec.prefix, "Tensor name prefix")->capture_default_str();
  sub->add_flag("--qat", spec.qat,
                "Weights like a QAT checkpoint: the matrices q4_0 quantizes lie exactly on an int4 lattice with bf16 "
                "block scales (codes in [-8,7] and in [-7,7], +7 extremes, scales below fp16's normal range), "
                "stored as float32");
  sub->add_flag("--with-shared-kv", spec.shared_kv, "Also store the unused k/v/k_norm of KV-shared layers");
  sub->add_option("--tokenizer", spec.tokenizer, "Directory with the Gemma 4 tokenizer files");
  sub->add_flag("--no-vision", spec.no_vision,
                "Omit the vision tower (written by default: tiny for tiny presets, full size for e2b/e4b)");
  sub->add_flag("--no-audio", spec.no_audio,
                "Omit the audio tower (written by default: tiny for tiny presets, full size for e2b/e4b)");
  sub->add_flag("--towers-only", spec.towers_only,
                "Write only config.json, processor_config.json and the vision/audio towers (no text decoder, no "
                "tokenizer): for `encode` on full-size towers without the multi-GB text weights");
  sub->callback([opt] {
    ringlm::cli::show_progress(0.0);  // a bar on a terminal, a line per shard otherwise
    ringlm::cli::write_test_model(opt->out, opt->spec);
  });
}
