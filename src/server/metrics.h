// Server metrics in Prometheus text exposition format (version 0.0.4): request counts by route
// and status, token counters, TTFT and inter-token latency histograms; gauges (queue depth,
// active slots, KV use) are sampled by the caller when rendering.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ringlm::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // Appends `name_bucket{le=..}`, `name_sum` and `name_count` lines.
  void render(const std::string& name, std::string& out) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<std::uint64_t> counts_;  // per bucket (not cumulative), last = +Inf
  double sum_ = 0.0;
  std::uint64_t count_ = 0;
};

struct Gauges {
  int queue_depth = 0;
  int slots_active = 0;
  int slots_total = 0;
  std::int64_t kv_used = 0;
  std::int64_t kv_capacity = 0;
  // Continuous batching (engine backends that run every slot in one batched loop).
  bool batched = false;
  std::uint64_t batch_steps = 0;           // forward passes
  std::uint64_t batch_rows = 0;            // token rows over all passes
  std::uint64_t batch_sequence_steps = 0;  // sum of the sequences each pass advanced
  int batch_last = 0;                      // sequences in the last pass
  std::uint64_t drafted_tokens = 0;        // speculative decoding (--draft): tokens drafted and verified
  std::uint64_t accepted_drafts = 0;       // of those, accepted
  std::uint64_t prefix_hits = 0;           // requests that reused cached prompt KV (any source)
  std::uint64_t prefix_misses = 0;         // requests with a whole prompt block that reused none
  std::uint64_t prefix_reused_tokens = 0;  // prompt tokens not recomputed
  std::uint64_t kv_bytes = 0;              // KV cache bytes allocated (slots)
  // The shared prefix cache (engine/prefix_cache.h; --prefix-cache-mb).
  std::uint64_t prefix_store_hits = 0;     // requests it supplied KV to
  std::uint64_t prefix_store_tokens = 0;   // prompt tokens it supplied
  std::uint64_t prefix_store_evicted = 0;  // blocks dropped (least recently used)
  std::uint64_t prefix_store_bytes = 0;    // KV bytes it holds
  std::uint64_t prefix_store_max_bytes = 0;
  std::uint64_t prefix_store_blocks = 0;
  // The compiled-schema cache (guided/grammar_cache.h; --grammar-cache-mb/-entries): each
  // entry's bytes are its grammar index's own count (masks, transition tables, stacks).
  // Media work under --media-memory-mb (media_budget.h): estimated bytes held by requests
  // decoding or encoding images and audio now, the bound, how many, and leases refused.
  std::uint64_t media_bytes_in_use = 0, media_max_bytes = 0, media_refused = 0;
  int media_active = 0;
  bool grammar_cache = false;
  std::uint64_t grammar_entries = 0, grammar_bytes = 0, grammar_max_bytes = 0;
  std::uint64_t grammar_hits = 0, grammar_misses = 0, grammar_evictions = 0;
};

class Metrics {
 public:
  Metrics();

  void count_request(const std::string& route, int status);
  void add_tokens(std::int64_t prompt, std::int64_t completion);
  void observe_ttft(double seconds) { ttft_.observe(seconds); }
  void observe_inter_token(double seconds) { inter_token_.observe(seconds); }
  void observe_request_duration(double seconds) { duration_.observe(seconds); }
  void count_cancelled();
  void count_rejected_queue_full();

  std::string render(const Gauges& gauges) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  std::uint64_t prompt_tokens_ = 0, completion_tokens_ = 0, cancelled_ = 0, rejected_ = 0;
  Histogram ttft_, inter_token_, duration_;
};

}  // namespace ringlm::server
