// Test driver for tests/kernels/attention_numpy_test.py: reads one attention problem from a
// binary file, runs the reference attend_one (per token) and the tiled attend() on every ISA
// path this build and CPU have, and writes all outputs for comparison with float64 numpy.
//
//   attention_io IN OUT
// IN (little-endian): int32 n_tokens, n_heads, n_kv_heads, head_dim, n_slots, window, threads,
//   kv_type (0: f32 cache, 1: f16 cache: K and V are stored with kv_store_f16 first, as the
//   model's cache does, and every path reads the halves); float32 scale; float32 q[n_tokens][n_heads][head_dim]; float32 k[n_slots][n_kv][head_dim];
//   float32 v (same); int32 pos[n_slots]; int64 q_pos[n_tokens].
// OUT: int32 n_paths, then per path: char name[16] (NUL padded), float32 out[n_tokens][n_heads][head_dim].
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
  std::int32_t h[8];
  in.read(reinterpret_cast<char*>(h), sizeof h);
  float scale = 0;
  in.read(reinterpret_cast<char*>(&scale), sizeof scale);
  if (!in) ringlm::fail(in_path, ": truncated header");
  const int n = h[0], nh = h[1], nkv = h[2], d = h[3], n_slots = h[4], window = h[5], threads = h[6];
  if (h[7] != 0 && h[7] != 1) ringlm::fail(in_path, ": kv_type must be 0 (f32) or 1 (f16), not ", h[7]);
  if (n < 1 || nh < 1 || nkv < 1 || d < 1 || n_slots < 0 || threads < 1 || n > 4096 || nh > 256 || d > 4096 ||
      n_slots > (1 << 20))
    ringlm::fail(in_path, ": implausible header (n=", n, " heads=", nh, "/", nkv, " d=", d, " slots=", n_slots,
                 " threads=", threads, ")");
  std::vector<float> q, k, v;
  std::vector<std::int32_t> pos;
  std::vector<std::int64_t> qpos;
  read_into(in, q, static_cast<std::size_t>(n) * nh * d, "q", in_path);
  read_into(in, k, static_cast<std::size_t>(n_slots) * nkv * d, "k", in_path);
  read_into(in, v, static_cast<std::size_t>(n_slots) * nkv * d, "v", in_path);
  read_into(in, pos, n_slots, "pos", in_path);
  read_into(in, qpos, n, "q_pos", in_path);
  KvSlots kv{k.data(), v.data(), pos.data(), n_slots, nkv, d};
  std::vector<std::uint16_t> k16(k.size()), v16(v.size());
  if (h[7] == 1) {
    kv_store_f16(k.data(), k16.data(), k.size());
    kv_store_f16(v.data(), v16.data(), v.size());
    kv = KvSlots{nullptr, nullptr, pos.data(), n_slots, nkv, d, KvType::f16, k16.data(), v16.data()};
  }

  std::vector<Isa> isas = available_isas();
  std::ofstream out(out_path, std::ios::binary);
  const std::int32_t n_paths = static_cast<std::int32_t>(isas.size()) + 1;
  out.write(reinterpret_cast<const char*>(&n_paths), sizeof n_paths);
  std::vector<float> y(q.size());
  {
    std::vector<float> scratch(attend_scratch_floats(nh, kv));
    const std::size_t row = static_cast<std::size_t>(nh) * d;
    for (int t = 0; t < n; ++t)
      attend_one(q.data() + t * row, nh, qpos[t], kv, window, scale, scratch.data(), y.data() + t * row);
    write_path(out, "reference", y);
  }
  ParallelFor pool(threads);
  for (Isa isa : isas) {
    force_isa(isa);
    std::fill(y.begin(), y.end(), 12345.0f);
    attend(q.data(), n, qpos.data(), nh, kv, window, scale, y.data(), &pool);
    write_path(out, isa_name(isa), y);
  }
  if (!out) ringlm::fail(out_path, ": write failed");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: attention_io IN OUT\n");
    return 2;
  }
  try {
    return run(argv[1], argv[2]);
  } catch (const ringlm::Error& e) {
    std::fprintf(stderr, "attention_io: error: %s\n", e.what());
    return 1;
  }
}
