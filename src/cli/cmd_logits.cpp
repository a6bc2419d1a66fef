// `ringlm logits`: runs token ids through the decoder and writes every position's logits,
// so the C++ forward pass can be compared with an independent reference. Positions below
// --decode-from go through chunked prefill, the rest through single-token decode.
#include <bit>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/command.h"
#include "kernels/q4_weight_matmul.h"
#include "model/model.h"
#include "util/error.h"

namespace {

// The output format is little-endian float32; rows are written straight from memory.
static_assert(std::endian::native == std::endian::little, "ringlm logits assumes a little-endian host");

std::vector<std::int32_t> parse_ids(const std::string& text, const std::string& what) {
  std::vector<std::int32_t> ids;
  std::string token;
  std::istringstream in(text);
  auto flush = [&] {
    if (token.empty()) return;
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(token, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != token.size() || v < 0 || v > INT32_MAX) ringlm::fail(what, ": invalid token id '", token, "'");
    ids.push_back(static_cast<std::int32_t>(v));
    token.clear();
  };
  char c;
  while (in.get(c)) {
    if (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r') flush();
    else token.push_back(c);
  }
  flush();
  return ids;
}

}  // namespace

RINGLM_COMMAND(logits) {
  struct Options {
    std::string model, ids, ids_file, out;
    long long decode_from = -1;
    int ctx = 0;
    int threads = 0;
    std::string weights = "q4_0", activations = "int8x2";
  };
  auto opt = std::make_shared<Options>();
  auto* sub = app.add_subcommand("logits", "Write the float32 logits of every position of a token sequence");
  sub->footer("Example:\n  ringlm logits --model DIR --ids 2,105,300 --out logits.bin");
  sub->add_option("--model", opt->model, "Checkpoint directory")->required();
  sub->add_option("--ids", opt->ids, "Comma-separated token ids");
  sub->add_option("--ids-file", opt->ids_file, "File with token ids (comma or whitespace separated)");
  sub->add_option("--out", opt->out, "Output file: raw little-endian float32 [T][V]")->required();
  sub->add_option("--decode-from", opt->decode_from,
                  "Positions >= N use single-token decode (default: all positions prefill)");
  sub->add_option("--ctx", opt->ctx, "Full-attention KV capacity in tokens (default: min(8192, max_position_embeddings))");
  sub->add_option("--threads", opt->threads, "Worker threads (default: all cores or RINGLM_THREADS)");
  sub->add_option("--weights", opt->weights, "q4_0 (default): linear layers in q4_0 (quantized at load, or as "
                  "stored by ringlm convert) on the w4a8 kernels; stored: the float reference path over the "
                  "checkpoint's weights (a converted directory's q4_0 rows, dequantized)")
      ->check(CLI::IsMember({"stored", "q4_0"}));
  sub->add_option("--activations", opt->activations, "With --weights q4_0: int8x2 (default; two-plane "
                  "~15-bit activations: meets the float64 numerics gate), int8 (fastest prefill) or f32 (dequantized weight rows in float32, for checking)")
      ->check(CLI::IsMember({"int8", "int8x2", "f32"}));
  sub->callback([opt] {
    using namespace ringlm;
    std::vector<std::int32_t> ids;
    if (!opt->ids.empty()) ids = parse_ids(opt->ids, "--ids");
    if (!opt->ids_file.empty()) {
      std::ifstream in(opt->ids_file);
      if (!in) fail(opt->ids_file, ": cannot open");
      std::ostringstream ss;
      ss << in.rdbuf();
      auto more = parse_ids(ss.str(), opt->ids_file);
      ids.insert(ids.end(), more.begin(), more.end());
    }
    if (ids.empty()) fail("logits: no token ids (use --ids or --ids-file)");
    const auto t0 = std::chrono::steady_clock::now();
    kernels::set_q4_activations(opt->activations == "f32"      ? kernels::Q4Activations::f32
                                : opt->activations == "int8x2" ? kernels::Q4Activations::int8x2
                                                               : kernels::Q4Activations::int8);
    const auto format = opt->weights == "q4_0" ? model::WeightFormat::q4_0 : model::WeightFormat::stored;
    auto model = model::Model::load(opt->model, {.threads = opt->threads, .weights = format});
    const auto t1 = std::chrono::steady_clock::now();
    model::Session session(model, {.context_tokens = opt->ctx});
    const std::size_t T = ids.size(), V = model->config().vocab_size;
    const std::size_t n_prefill =
        opt->decode_from < 0 ? T : std::min<std::size_t>(T, static_cast<std::size_t>(opt->decode_from));

    std::ofstream out(opt->out, std::ios::binary);
    if (!out) fail(opt->out, ": cannot create");
    std::vector<std::int32_t> argmax(T);
    auto emit = [&](std::size_t i, std::span<const float> row) {
      out.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size() * sizeof(float)));
      std::size_t best = 0;
      for (std::size_t v = 1; v < row.size(); ++v)
        if (row[v] > row[best]) best = v;
      argmax[i] = static_cast<std::int32_t>(best);
    };
    std::vector<std::int64_t> positions(T);
    for (std::size_t i = 0; i < T; ++i) positions[i] = static_cast<std::int64_t>(i);
    if (n_prefill > 0)
      session.prefill(std::span(ids.data(), n_prefill), std::span(positions.data(), n_prefill),
                      model::LogitsMode::All, emit);
    const auto t_prefill = std::chrono::steady_clock::now();
    const std::clock_t cpu_prefill = std::clock();
    for (std::size_t i = n_prefill; i < T; ++i) emit(i, session.decode(ids[i], positions[i]));
    out.close();
    if (!out) fail(opt->out, ": write failed");
    const auto t2 = std::chrono::steady_clock::now();
    const double decode_cpu_s = double(std::clock() - cpu_prefill) / CLOCKS_PER_SEC;
    for (std::size_t i = 0; i < T; ++i) std::printf("%zu\t%d\n", i, argmax[i]);
    const double prefill_s = std::chrono::duration<double>(t_prefill - t1).count();
    const double decode_s = std::chrono::duration<double>(t2 - t_prefill).count();
    std::fprintf(stderr,
                 "logits: %zu positions x %zu vocab; load %.3f s; prefill %zu tokens %.3f s; decode %zu tokens %.3f s"
                 " (%.1f ms/token, %.1f ms CPU/token over all threads)\n",
                 T, V, std::chrono::duration<double>(t1 - t0).count(), n_prefill, prefill_s, T - n_prefill, decode_s,
                 T > n_prefill ? 1e3 * decode_s / double(T - n_prefill) : 0.0,
                 T > n_prefill ? 1e3 * decode_cpu_s / double(T - n_prefill) : 0.0);
  });
}
