// `ringlm convert --model HF_DIR --out DIR`: writes a packed model directory (q4p16 linear
// layers, the int8 PLE sidecar, config and tokenizer files, the vision/audio towers in
// towers.rlpk; docs/convert.md) that every command loads by mapping. `--out FILE.gguf`
// writes a gemma4 GGUF instead (as export-gguf), `--mmproj-out FILE.gguf` the towers as a
// llama.cpp mmproj GGUF (either or both).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "cli/hf_model.h"
#include "cli/progress_display.h"
#include "cli/gguf_export.h"
#include "cli/tower_export.h"
#include "kernels/thread_pool.h"
#include "model/converter.h"
#include "util/error.h"

RINGLM_COMMAND(convert) {
  struct Options {
    std::string model, hf, out, type, mmproj_out, tower_type = "f16";
    int threads = 0;
    bool no_tokenizer = false;
  };
  static Options opt;
  auto* sub = app.add_subcommand("convert", "Convert a Hugging Face checkpoint to a packed model directory "
                                            "(mapped at load) or, with --out FILE.gguf, to a GGUF file");
  sub->footer("Example:\n  ringlm convert --model /models/gemma-4-e2b-it --out /models/e2b-packed");
  auto* model_opt = sub->add_option("--model,-m", opt.model, "Hugging Face checkpoint directory (config.json + safetensors)");
  ringlm::cli::add_hf_option(sub, opt.hf, model_opt);
  sub->add_option("--out,-o", opt.out, "Output directory, or a file name ending in .gguf");
  sub->add_option("--mmproj-out", opt.mmproj_out,
                  "Also (or only) write the vision/audio towers as a llama.cpp mmproj GGUF file (projector types "
                  "gemma4v, gemma4a), for --mmproj");
  sub->add_option("--tower-type", opt.tower_type,
                  "Type of the tower matrices in the packed directory and the mmproj file: f16, bf16 or q8_0; norms, "
                  "biases, position table and convolution kernels stay f32 (default: f16)");
  sub->add_option("--type", opt.type, "GGUF output only: matrix type f32 f16 bf16 q8_0 q4_0 q4_1 q4_k q5_k q6_k "
                                      "(default: q4_0)");
  sub->add_flag("--no-tokenizer", opt.no_tokenizer, "GGUF output only: do not embed the tokenizer");
  sub->add_option("--threads,-t", opt.threads, "Worker threads (default: RINGLM_THREADS, else all cores)");
  sub->callback([] {
    using namespace ringlm;
    if (opt.model.empty() && opt.hf.empty()) throw CLI::RequiredError("--model (or -hf ORG/NAME)");
    if (opt.out.empty() && opt.mmproj_out.empty()) fail("convert: give --out DIR|FILE.gguf and/or --mmproj-out FILE.gguf");
    if (!opt.hf.empty()) opt.model = cli::resolve_hf_model(opt.hf).model.string();
    const io::DType tower_type = cli::parse_tower_type(opt.tower_type);
    cli::show_progress(0.0);  // every stage: a bar on a terminal, a line per stage otherwise
    if (!opt.mmproj_out.empty()) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto r = cli::export_mmproj(opt.model, opt.mmproj_out, tower_type);
      std::printf("%s: mmproj with %s%s%s, %d tensors (%d matrices %s, %d kept as F16: rows not a multiple of 32), "
                  "%llu bytes of tensors, %.2f s\n",
                  opt.mmproj_out.c_str(), r.vision ? "vision (gemma4v)" : "", r.vision && r.audio ? " and " : "",
                  r.audio ? "audio (gemma4a)" : "", r.tensors, r.matrices, io::dtype_name(tower_type), r.fallback_f16,
                  static_cast<unsigned long long>(r.bytes),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (opt.out.empty()) return;
    }
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
    const auto towers = cli::export_packed_towers(opt.model, opt.out, tower_type);
    if (towers.tensors > 0)
      std::printf("%s/towers.rlpk: %s%s%s, %d tensors (%d matrices %s, %d kept as F16), %llu bytes\n", opt.out.c_str(),
                  towers.vision ? "vision" : "", towers.vision && towers.audio ? " and " : "", towers.audio ? "audio" : "",
                  towers.tensors, towers.matrices, io::dtype_name(tower_type), towers.fallback_f16,
                  static_cast<unsigned long long>(towers.bytes));
    else
      std::printf("%s: no vision/audio towers (the checkpoint is text only)\n", opt.out.c_str());
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string copied;
    for (const auto& c : r.copied) copied += (copied.empty() ? "" : ", ") + c;
    std::printf("%s: %d q4p16 matrices, %d f32 matrices, weights.rlpk %llu bytes, sidecar %llu bytes, copied %s; "
                "%.2f s\n",
                opt.out.c_str(), r.q4_matrices, r.f32_matrices, static_cast<unsigned long long>(r.packed_bytes),
                static_cast<unsigned long long>(r.sidecar_bytes), copied.empty() ? "nothing" : copied.c_str(), secs);
    const double total = static_cast<double>(std::max<std::uint64_t>(1, r.q4.blocks));
    std::printf("%s: q4_0 blocks: %llu; on an int4 lattice %llu (%.2f %%); recovered exactly (codes and scale) %llu "
                "(%.2f %%); the rest rounded with ggml's rule; %llu rows need a power-of-two factor (row factors: %llu "
                "bytes)\n",
                opt.out.c_str(), static_cast<unsigned long long>(r.q4.blocks),
                static_cast<unsigned long long>(r.q4.lattice), 100.0 * static_cast<double>(r.q4.lattice) / total,
                static_cast<unsigned long long>(r.q4.exact), 100.0 * static_cast<double>(r.q4.exact) / total,
                static_cast<unsigned long long>(r.q4.rows_scaled), static_cast<unsigned long long>(r.row_factor_bytes));
  });
}
