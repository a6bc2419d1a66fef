// `ringlm export-gguf DIR OUT.gguf`: writes a Hugging Face Gemma 4 checkpoint directory
// (config.json, safetensors, tokenizer files) as one gemma4 GGUF file, optionally quantized.
// Same as `ringlm convert --model DIR --out OUT.gguf` (kept as an alias).
#include <string>

#include "cli/command.h"
#include "cli/progress_display.h"
#include "cli/gguf_export.h"

RINGLM_COMMAND(export_gguf) {
  struct Options {
    std::string dir, out, type = "bf16";
    bool no_tokenizer = false;
  };
  static Options opt;
  auto* sub = app.add_subcommand("export-gguf", "Write a Hugging Face Gemma 4 checkpoint directory as a GGUF file "
                                                "(alias of convert --out FILE.gguf)");
  sub->footer("Example:\n  ringlm export-gguf /models/gemma-4-e2b-it e2b.gguf --type q4_0");
  sub->add_option("dir", opt.dir, "Checkpoint directory (config.json + safetensors)")->required();
  sub->add_option("out", opt.out, "Output .gguf file")->required();
  sub->add_option("--type", opt.type, "Matrix type: f32 f16 bf16 q8_0 q4_0 q4_1 q4_k q5_k q6_k")->capture_default_str();
  sub->add_flag("--no-tokenizer", opt.no_tokenizer, "Do not embed the tokenizer (tokenizer.json)");
  sub->callback([] {
    ringlm::cli::show_progress(0.0);
    ringlm::cli::export_gguf(opt.dir, opt.out, opt.type, opt.no_tokenizer);
  });
}
