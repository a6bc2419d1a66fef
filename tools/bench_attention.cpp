// Attention benchmark at Gemma 4 E2B shapes: the reference kernel as the model called it
// before (attend_heads split over heads for decode, attend_one per token for a chunk) vs
// the tiled attend() (attention.h), per ISA path and thread count.
//   sliding layer: head_dim 256, 8 query heads on 1 KV head, window 512 on a 576-slot ring
//   full layer:    head_dim 512, 8 query heads on 1 KV head, one slot per position
// Decode at contexts 512, 4096, 8192 and a 64-token prefill chunk at 4096. K/V rotate through
// copies spanning --set-mb (default 512 MB, above this machine's 260 MB L3), so a call reads
// its cache from DRAM as in a real decode step (where 1 GB of weights streams in between).
// The last columns: the tiled kernel over an f16 copy of the same caches (--set-mb / 2 of
// halves), timed right after the f32 one, and the f16 gain (f32 time / f16 time).
//
//   bench_attention [--isa best|all|scalar,avx2,...] [--threads 1,2] [--set-mb 512] [--min-ms 300]
//                   [--contexts 512,4096,8192] [--only decode,chunk] [--layers sliding,full]
//                   [--reference 0|1]
// --layers picks the layer shapes; --reference 0 skips timing the old kernel (its columns
// print 0), which at long contexts takes most of the run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/cpu_features.h"
#include "kernels/dispatch.h"
#include "kernels/ref_ops.h"
#include "kernels/ref_parallel.h"

#include "bench_common.h"

using namespace ringlm::kernels;

using ringlm::bench::split;
using ringlm::bench::time_calls;
using ringlm::bench::Timing;

namespace {

struct Layer {
  const char* name;
  int d, n_slots_cap, window;  // n_slots_cap: ring size, or 0 for a full cache (slots = context)
};

// A cache holding positions [0, context) as the model lays them out (ring: slot = pos % ring,
// the last `ring` positions), `copies` K/V copies to rotate through.
struct Cache {
  int n_slots = 0, d = 0;
  std::vector<std::int32_t> pos;
  std::vector<std::vector<float>> k, v;
  std::vector<std::vector<std::uint16_t>> k16, v16;  // the same values as an f16 cache holds them
  KvSlots view(std::size_t call) const {
    const std::size_t c = call % k.size();
    return {k[c].data(), v[c].data(), pos.data(), n_slots, 1, d};
  }
  KvSlots view16(std::size_t call) const {
    const std::size_t c = call % k16.size();
    return {nullptr, nullptr, pos.data(), n_slots, 1, d, KvType::f16, k16[c].data(), v16[c].data()};
  }
};

Cache make_cache(const Layer& L, int context, std::size_t set_bytes, std::mt19937& rng) {
  Cache c;
  c.d = L.d;
  c.n_slots = L.window > 0 ? std::min(L.n_slots_cap, context) : context;
  const int ring = L.window > 0 ? L.n_slots_cap : context;
  c.pos.assign(c.n_slots, -1);
  for (int p = std::max(0, context - ring); p < context; ++p) c.pos[p % ring] = p;
  const std::size_t floats = static_cast<std::size_t>(c.n_slots) * L.d;
  const std::size_t copies = std::max<std::size_t>(1, set_bytes / (2 * floats * sizeof(float)));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> base(floats);
  for (auto& f : base) f = nd(rng);
  for (std::size_t i = 0; i < copies; ++i) {
    c.k.push_back(base);
    c.v.push_back(base);
    std::rotate(c.v.back().begin(), c.v.back().begin() + 1, c.v.back().end());
    c.k16.emplace_back(floats);
    c.v16.emplace_back(floats);
    kv_store_f16(c.k.back().data(), c.k16.back().data(), floats);
    kv_store_f16(c.v.back().data(), c.v16.back().data(), floats);
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Isa> isas = {best_isa()};
  std::vector<int> threads = {1, 2}, contexts = {512, 4096, 8192};
  std::size_t set_mb = 512;
  double min_ms = 300;
  std::vector<std::string> only = {"decode", "chunk"};
  std::vector<std::string> layer_names = {"sliding", "full"};
  bool time_reference = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], val = argv[i + 1];
    if (key == "--isa") {
      isas.clear();
      if (val == "all") isas = available_isas();
      else if (val == "best") isas = {best_isa()};
      else
        for (const auto& s : split(val)) isas.push_back(parse_isa(s));
    } else if (key == "--threads") {
      threads.clear();
      for (const auto& s : split(val)) threads.push_back(std::stoi(s));
    } else if (key == "--contexts") {
      contexts.clear();
      for (const auto& s : split(val)) contexts.push_back(std::stoi(s));
    } else if (key == "--set-mb") {
      set_mb = std::stoul(val);
    } else if (key == "--min-ms") {
      min_ms = std::stod(val);
    } else if (key == "--only") {
      only = split(val);
    } else if (key == "--layers") {
      layer_names = split(val);
    } else if (key == "--reference") {
      time_reference = val != "0";
    } else {
      std::fprintf(stderr, "unknown option %s\n", key.c_str());
      return 2;
    }
  }
  const auto wants = [&](const char* w) { return std::find(only.begin(), only.end(), w) != only.end(); };
  std::printf("cpu: %s; K/V rotated over %zu MB; times in ms per call (best / median)\n",
              cpu_features().describe().c_str(), set_mb);
  std::printf("%-8s %-7s %-6s %6s %3s %7s | %17s | %17s | %-13s | %17s | %s\n", "isa", "layer", "kind", "ctx", "thr",
              "tokens", "reference", "tiled", "speedup", "tiled f16 KV", "f16 gain (best, median)");
  const Layer layers[] = {{"sliding", 256, 576, 512}, {"full", 512, 0, 0}};
  constexpr int kHeads = 8;
  std::mt19937 rng(5);
  for (const Layer& L : layers) {
    if (std::find(layer_names.begin(), layer_names.end(), L.name) == layer_names.end()) continue;
    for (int context : contexts) {
      const Cache cache = make_cache(L, context, set_mb << 20, rng);
      struct Shape {
        const char* kind;
        int tokens;
      };
      std::vector<Shape> shapes;
      if (wants("decode")) shapes.push_back({"decode", 1});
      if (wants("chunk") && context == 4096) shapes.push_back({"chunk", 64});
      for (const Shape& sh : shapes) {
        const int n = sh.tokens;
        std::vector<float> q(static_cast<std::size_t>(n) * kHeads * L.d), out(q.size());
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (auto& f : q) f = nd(rng);
        std::vector<std::int64_t> qpos(n);
        for (int t = 0; t < n; ++t) qpos[t] = context - n + t;
        const float scale = 1.0f / std::sqrt(static_cast<float>(L.d));
        KvSlots whole = cache.view(0);
        const std::size_t scratch = attend_scratch_floats(kHeads, whole);
        for (Isa isa : isas) {
          force_isa(isa);
          for (int thr : threads) {
            ParallelFor pool(thr);
            // The model's former call pattern, verbatim in structure.
            const Timing ref = !time_reference ? Timing{} : time_calls(min_ms, [&](std::size_t call) {
              const KvSlots view = cache.view(call);
              if (n == 1) {
                pool.run(kHeads, [&](std::int64_t h0, std::int64_t h1) {
                  thread_local std::vector<float> sc;
                  if (sc.size() < scratch) sc.resize(scratch);
                  attend_heads(q.data(), kHeads, static_cast<int>(h0), static_cast<int>(h1), qpos[0], view, L.window,
                               scale, sc.data(), out.data());
                });
              } else {
                pool.run(n, [&](std::int64_t b, std::int64_t e) {
                  thread_local std::vector<float> sc;
                  if (sc.size() < scratch) sc.resize(scratch);
                  for (std::int64_t t = b; t < e; ++t)
                    attend_one(q.data() + t * kHeads * L.d, kHeads, qpos[t], view, L.window, scale, sc.data(),
                               out.data() + t * kHeads * L.d);
                });
              }
            });
            const Timing fast = time_calls(min_ms, [&](std::size_t call) {
              attend(q.data(), n, qpos.data(), kHeads, cache.view(call), L.window, scale, out.data(), &pool);
            });
            const Timing half = time_calls(min_ms, [&](std::size_t call) {
              attend(q.data(), n, qpos.data(), kHeads, cache.view16(call), L.window, scale, out.data(), &pool);
            });
            std::printf("%-8s %-7s %-6s %6d %3d %7d | %7.3f / %7.3f | %7.3f / %7.3f | %5.1fx %5.1fx | %7.3f / %7.3f | "
                        "%5.2fx %5.2fx\n",
                        isa_name(isa), L.name, sh.kind, context, thr, n, ref.best * 1e3, ref.median * 1e3,
                        fast.best * 1e3, fast.median * 1e3, ref.best / fast.best, ref.median / fast.median,
                        half.best * 1e3, half.median * 1e3, fast.best / half.best, fast.median / half.median);
            std::fflush(stdout);
          }
        }
      }
    }
  }
  return 0;
}
