// `ringlm convert --model HF_DIR --out DIR`: writes a packed model directory (q4p16 linear
// layers, the int8 PLE sidecar, config and tokenizer files; docs/convert.md) that every
// command loads by mapping. `--out FILE.gguf` writes a gemma4 GGUF instead (as export-gguf).
#include <chrono>
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "cli/progress_display.h"
#include "cli/gguf_export.h"
#include "kernels/thread_pool.h"
#include "model/converter.h"
#include "util/error.h"

RINGLM_COMMAND(convert) {
  struct Options {
    std::string model, out, type;
    int threads = 0;
    bool no_tokenizer = false;
  };
  static Options opt;
  auto* sub = app.add_subcommand("convert", "Convert a Hugging Face checkpoint to a packed model directory "
                                            "(mapped at load) or, with --out FILE.gguf, to a GGUF file");
  sub->footer("Example:\n  ringlm convert --model /models/gemma-4-e2b-it --out /models/e2b-packed");
  sub->add_option("--model,-m", opt.model, "Hugging Face checkpoint directory (config.json + safetensors)")->required();
  sub->add_option("--out,-o", opt.out, "Output directory, or a file name ending in .gguf")->required();
  sub->add_option("--type", opt.type, "GGUF output only: matrix type f32 f16 bf16 q8_0 q4_0 q4_1 q4_k q5_k q6_k "
                                      "(default q4_0)");
  sub->add_flag("--no-tokenizer", opt.no_tokenizer, "GGUF output only: do not embed the tokenizer");
  sub->add_option("--threads", opt.threads, "Worker threads (default: all cores or RINGLM_THREADS)");
  sub->callback([] {
    using namespace ringlm;
    cli::show_progress(0.0);  // every stage: a bar on a terminal, a line per stage otherwise
    const bool gguf = opt.out.size() >= 5 && opt.out.compare(opt.out.size() - 5, 5, ".gguf") == 0;
    if (gguf) {
      cli::export_gguf(opt.model, opt.out, opt.type.empty() ? "q4_0" : opt.type, opt.no_tokenizer);
      return;
    }
    if (!opt.type.empty()) fail("convert: --type applies to GGUF output (--out FILE.gguf); a packed directory is "
                                "always q4_0 (q4p16) with int8 embedding tables");
    if (opt.no_tokenizer) fail("convert: --no-tokenizer applies to GGUF output only");
    if (opt.threads > 0) kernels::set_default_thread_count(static_cast<std::size_t>(opt.threads));
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = model::convert_to_packed_dir(opt.model, opt.out);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string copied;
    for (const auto& c : r.copied) copied += (copied.empty() ? "" : ", ") + c;
    std::printf("%s: %d q4p16 matrices, %d f32 matrices, weights.rlpk %llu bytes, sidecar %llu bytes, copied %s; "
                "%.2f s\n",
                opt.out.c_str(), r.q4_matrices, r.f32_matrices, static_cast<unsigned long long>(r.packed_bytes),
                static_cast<unsigned long long>(r.sidecar_bytes), copied.empty() ? "nothing" : copied.c_str(), secs);
  });
}
