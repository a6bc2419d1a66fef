// Measures the load-time repack of a GGUF file's Q4_0 / Q4_K matrices into the kernels'
// layouts (model::repack_gguf_blocks): time, matrices, bytes, and the resident set before
// and after (the file's pages are handed back after each matrix).
//
//   gguf_repack_time FILE.gguf [--threads N] [--cold]
// --cold first drops FILE's pages from the page cache (posix_fadvise DONTNEED), so the time
// includes reading the file; otherwise run it twice and read the second (warm) figure.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "io/gguf_gemma4.h"
#include "io/gguf_reader.h"
#include "kernels/thread_pool.h"
#include "model/gguf_model.h"
#include "model/q4_weights.h"
#include "model/tensor_manifest.h"
#include "model/weights.h"
#include "util/process_stats.h"

using namespace ringlm;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gguf_repack_time FILE.gguf [--threads N] [--cold]\n");
    return 2;
  }
  std::size_t threads = 1;
  bool cold = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = std::stoul(argv[++i]);
    else if (std::strcmp(argv[i], "--cold") == 0) cold = true;
  }
  if (cold) {
    const int fd = ::open(argv[1], O_RDONLY);
    if (fd >= 0) {
      (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
  }
  kernels::set_default_thread_count(threads);
  auto file = std::make_shared<const io::GgufFile>(argv[1]);
  const model::ModelConfig config = model::load_gguf_model_config(*file);
  io::GgufTensorSource source(file, model::gemma4_canonical_name);
  model::ModelWeights weights = model::bind_weights(source, config);
  const double rss0 = current_rss_bytes() / 1e6;
  model::QuantizedWeightsInfo info;
  const auto owned = model::repack_gguf_blocks(weights, &info);
  std::printf("%s: %zu matrices repacked in %.3f s with %zu thread(s), %.1f MB packed (%.2f GB/s); RSS %.0f MB before, "
              "%.0f MB after, peak %.0f MB\n",
              argv[1], info.matrices, info.seconds, threads, info.bytes / 1e6, info.bytes / info.seconds / 1e9, rss0,
              current_rss_bytes() / 1e6, peak_rss_bytes() / 1e6);
  return 0;
}
