// Test driver for tests/kernels/attention_dense_numpy_test.py: reads one dense (tower)
// attention problem from a binary file, runs the reference attend_one per query (every key at
// position 0, as the vision tower called it) and attend_dense on every ISA path this build and
// CPU have, and writes all outputs for comparison with float64 numpy.
//
//   attention_dense_io IN OUT
// IN (little-endian): int32 n_queries, n_keys, n_heads, n_kv_heads, head_dim, threads;
//   float32 scale; float32 q[n_queries][n_heads][head_dim]; float32 k[n_keys][n_kv][head_dim];
//   float32 v (same).
// OUT: int32 n_paths, then per path: char name[16] (NUL padded), float32 out[n_queries][n_heads][head_dim].
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/dispatch.h"
#include "kernels/ref_ops.h"
#include "kernels/ref_parallel.h"
#include "util/error.h"
#include "attention_io_common.h"

using namespace ringlm::kernels;

namespace {

using ringlm::tools::read_into;
using ringlm::tools::write_path;

int run(const std::string& in_path, const std::string& out_path) {
  std::ifstream in(in_path, std::ios::binary);
  if (!in) ringlm::fail(in_path, ": cannot open");
  std::int32_t h[6];
  in.read(reinterpret_cast<char*>(h), sizeof h);
  float scale = 0;
  in.read(reinterpret_cast<char*>(&scale), sizeof scale);
  if (!in) ringlm::fail(in_path, ": truncated header");
  const int nq = h[0], nk = h[1], nh = h[2], nkv = h[3], d = h[4], threads = h[5];
  if (nq < 1 || nk < 0 || nh < 1 || nkv < 1 || d < 1 || threads < 1 || nq > 65536 || nk > 65536 || nh > 256 ||
      d > 4096)
    ringlm::fail(in_path, ": implausible header (queries=", nq, " keys=", nk, " heads=", nh, "/", nkv, " d=", d,
                 " threads=", threads, ")");
  std::vector<float> q, k, v;
  read_into(in, q, static_cast<std::size_t>(nq) * nh * d, "q", in_path);
  read_into(in, k, static_cast<std::size_t>(nk) * nkv * d, "k", in_path);
  read_into(in, v, static_cast<std::size_t>(nk) * nkv * d, "v", in_path);

  std::vector<Isa> isas = available_isas();
  std::ofstream out(out_path, std::ios::binary);
  const std::int32_t n_paths = static_cast<std::int32_t>(isas.size()) + 1;
  out.write(reinterpret_cast<const char*>(&n_paths), sizeof n_paths);
  std::vector<float> y(q.size());
  {
    std::vector<std::int32_t> pos(nk, 0);
    const KvSlots kv{k.data(), v.data(), pos.data(), nk, nkv, d};
    std::vector<float> scratch(attend_scratch_floats(nh, kv));
    const std::size_t row = static_cast<std::size_t>(nh) * d;
    for (int t = 0; t < nq; ++t) attend_one(q.data() + t * row, nh, 0, kv, 0, scale, scratch.data(), y.data() + t * row);
    write_path(out, "reference", y);
  }
  ParallelFor pool(threads);
  for (Isa isa : isas) {
    force_isa(isa);
    std::fill(y.begin(), y.end(), 12345.0f);
    attend_dense(q.data(), nq, k.data(), v.data(), nk, nh, nkv, d, scale, y.data(), &pool);
    write_path(out, isa_name(isa), y);
  }
  if (!out) ringlm::fail(out_path, ": write failed");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: attention_dense_io IN OUT\n");
    return 2;
  }
  try {
    return run(argv[1], argv[2]);
  } catch (const ringlm::Error& e) {
    std::fprintf(stderr, "attention_dense_io: error: %s\n", e.what());
    return 1;
  }
}
