// Stand-alone check of the tiled attention without GoogleTest, for cross-built targets (run
// under qemu by attention_neon_cross_test.sh): every available path (NEON and scalar on
// aarch64) against float64 attention on a wrapped ring with holes and a full cache, chunk and
// decode (with the slot split over 2 threads), and the exp against float64; the same over an
// f16 cache (K/V stored with kv_store_f16, checked bit for bit against the scalar rounding
// rule, and the float64 reference over the widened halves). Exits 1 on failure.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "kernels/cpu_features.h"
#include "kernels/dispatch.h"
#include "kernels/ref_parallel.h"
#include "util/float16.h"

using namespace ringlm::kernels;

namespace {

int failures = 0;

// Same bound as tests/kernels/attention_fast_test.cpp: vmax * (2 sqrt(d) eps A + 1e-6).
int check_case(int n_tokens, int d, int n_slots, int window, std::int64_t end, bool holes, ParallelFor* pool,
               std::mt19937& rng, bool half = false) {
  const int nh = 8, nkv = 1;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> q(static_cast<std::size_t>(n_tokens) * nh * d), k(static_cast<std::size_t>(n_slots) * d), v(k.size());
  for (auto* x : {&q, &k, &v})
    for (auto& f : *x) f = nd(rng);
  std::vector<std::int32_t> pos(n_slots, -1);
  for (std::int64_t p = std::max<std::int64_t>(0, end - n_slots); p < end; ++p)
    pos[p % n_slots] = static_cast<std::int32_t>(p);
  if (holes)
    for (int s = 0; s < n_slots; s += 5) pos[s] = -1;
  std::vector<std::int64_t> qpos;
  for (int t = 0; t < n_tokens; ++t) qpos.push_back(end - n_tokens + t);
  KvSlots kv{k.data(), v.data(), pos.data(), n_slots, nkv, d};
  std::vector<std::uint16_t> k16(k.size()), v16(v.size());
  if (half) {
    for (auto& f : k) f *= 30.0f;  // larger keys: larger absolute rounding, sharper softmax
    k[3] = 1e6f;                   // saturates at 65504
    kv_store_f16(k.data(), k16.data(), k.size());
    kv_store_f16(v.data(), v16.data(), v.size());
    for (std::size_t i = 0; i < k.size(); ++i) {
      for (auto [x, h] : {std::pair{k[i], k16[i]}, std::pair{v[i], v16[i]}})
        if (h != ringlm::f32_to_fp16(std::min(std::max(x, -65504.0f), 65504.0f)) && ++failures <= 10)
          std::printf("FAIL kv_store_f16 %s: %g -> %04x\n", isa_name(active_isa()), x, h);
      k[i] = ringlm::fp16_to_f32(k16[i]);  // the reference attends over what the cache holds
      v[i] = ringlm::fp16_to_f32(v16[i]);
    }
    kv = KvSlots{nullptr, nullptr, pos.data(), n_slots, nkv, d, KvType::f16, k16.data(), v16.data()};
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<float> out(q.size(), 777.0f);
  attend(q.data(), n_tokens, qpos.data(), nh, kv, window, scale, out.data(), pool);
  const double eps = std::numeric_limits<float>::epsilon();
  for (int t = 0; t < n_tokens; ++t)
    for (int h = 0; h < nh; ++h) {
      const float* qr = q.data() + (static_cast<std::size_t>(t) * nh + h) * d;
      std::vector<double> sc;
      std::vector<int> idx;
      double amax = 0, vmax = 0;
      for (int s = 0; s < n_slots; ++s) {
        const std::int64_t p = pos[s];
        if (p < 0 || p > qpos[t] || (window > 0 && qpos[t] - p >= window)) continue;
        double dot = 0, ad = 0;
        for (int i = 0; i < d; ++i) {
          dot += double(qr[i]) * k[s * d + i];
          ad += std::fabs(double(qr[i]) * k[s * d + i]);
          vmax = std::max(vmax, std::fabs(double(v[s * d + i])));
        }
        sc.push_back(scale * dot);
        amax = std::max(amax, scale * ad);
        idx.push_back(s);
      }
      const float* o = out.data() + (static_cast<std::size_t>(t) * nh + h) * d;
      if (sc.empty()) {
        for (int i = 0; i < d; ++i)
          if (o[i] != 0.0f) ++failures;
        continue;
      }
      const double mx = *std::max_element(sc.begin(), sc.end());
      double den = 0;
      for (auto& e : sc) den += (e = std::exp(e - mx));
      const double tol = vmax * (2 * std::sqrt(double(d)) * eps * amax + 1e-6);
      for (int i = 0; i < d; ++i) {
        double want = 0;
        for (std::size_t j = 0; j < sc.size(); ++j) want += sc[j] / den * v[idx[j] * d + i];
        if (std::fabs(o[i] - want) > tol && ++failures <= 10)
          std::printf("FAIL attend %s n=%d d=%d slots=%d t=%d h=%d i=%d: %g vs %g\n", isa_name(active_isa()),
                      n_tokens, d, n_slots, t, h, i, o[i], want);
      }
    }
  return failures;
}

}  // namespace

int main() {
  std::printf("cpu: %s\n", cpu_features().describe().c_str());
  std::mt19937 rng(3);
  ParallelFor one(1), two(2);
  for (Isa isa : available_isas()) {
    force_isa(isa);
    check_case(7, 256, 576, 512, 1500, true, &two, rng);    // wrapped ring with holes, a chunk
    check_case(1, 256, 576, 512, 1500, false, &two, rng);   // decode, slots split over 2 threads
    check_case(1, 512, 400, 0, 400, false, &one, rng);      // full cache, one thread
    check_case(5, 20, 50, 0, 50, true, &one, rng);          // head_dim with a tail (not whole registers)
    check_case(7, 256, 576, 512, 1500, true, &two, rng, true);  // the same over f16 caches
    check_case(1, 512, 600, 0, 600, false, &two, rng, true);
    check_case(5, 20, 50, 0, 50, true, &one, rng, true);
    std::vector<float> x, y;
    for (double u = -87.3; u <= 88.0; u += 0.00731) x.push_back(static_cast<float>(u));
    y.resize(x.size());
    attention_exp(x.data(), y.data(), x.size());
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double want = std::exp(double(x[i]));
      if (want >= std::numeric_limits<float>::min()) worst = std::max(worst, std::fabs(y[i] - want) / want);
    }
    std::printf("%s: exp worst relative error %.3g\n", isa_name(isa), worst);
    if (worst > 3 * std::ldexp(1.0, -23)) ++failures;
  }
  std::printf("paths checked:");
  for (Isa isa : available_isas()) std::printf(" %s", isa_name(isa));
  std::printf("\n%s\n", failures ? "FAILED" : "all attention checks passed");
  return failures ? 1 : 0;
}
