#include "server/metrics.h"

#include <cstdio>

namespace ringlm::server {

namespace {

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void sample(std::string& out, const std::string& name, double value) {
  out += name;
  out += ' ';
  out += format_number(value);
  out += '\n';
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  std::size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  std::lock_guard lock(mu_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(const std::string& name, std::string& out) const {
  std::lock_guard lock(mu_);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + (i < bounds_.size() ? format_number(bounds_[i]) : "+Inf") + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  sample(out, name + "_sum", sum_);
  out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      inter_token_({0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28}),
      duration_({0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}) {}

void Metrics::count_request(const std::string& route, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{route, status}];
}

void Metrics::add_tokens(std::int64_t prompt, std::int64_t completion) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += static_cast<std::uint64_t>(prompt);
  completion_tokens_ += static_cast<std::uint64_t>(completion);
}

void Metrics::count_cancelled() {
  std::lock_guard lock(mu_);
  ++cancelled_;
}

void Metrics::count_rejected_queue_full() {
  std::lock_guard lock(mu_);
  ++rejected_;
}

std::string Metrics::render(const Gauges& g) const {
  std::string out;
  {
    std::lock_guard lock(mu_);
    header(out, "ringlm_requests_total", "counter", "HTTP requests by route and status code.");
    for (const auto& [key, n] : requests_) {
      out += "ringlm_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
             "\"} " + std::to_string(n) + "\n";
    }
    header(out, "ringlm_prompt_tokens_total", "counter", "Prompt tokens of finished generations.");
    sample(out, "ringlm_prompt_tokens_total", static_cast<double>(prompt_tokens_));
    header(out, "ringlm_completion_tokens_total", "counter", "Generated tokens.");
    sample(out, "ringlm_completion_tokens_total", static_cast<double>(completion_tokens_));
    header(out, "ringlm_generations_cancelled_total", "counter",
           "Generations cancelled (client disconnected or server shutting down).");
    sample(out, "ringlm_generations_cancelled_total", static_cast<double>(cancelled_));
    header(out, "ringlm_queue_rejections_total", "counter", "Requests refused with 429 because the queue was full.");
    sample(out, "ringlm_queue_rejections_total", static_cast<double>(rejected_));
  }
  header(out, "ringlm_time_to_first_token_seconds", "histogram", "Time from admission to the first generated token.");
  ttft_.render("ringlm_time_to_first_token_seconds", out);
  header(out, "ringlm_inter_token_latency_seconds", "histogram", "Time between consecutive generated tokens.");
  inter_token_.render("ringlm_inter_token_latency_seconds", out);
  header(out, "ringlm_request_duration_seconds", "histogram", "Generation request wall time, queue wait included.");
  duration_.render("ringlm_request_duration_seconds", out);
  header(out, "ringlm_queue_depth", "gauge", "Requests waiting for a free slot.");
  sample(out, "ringlm_queue_depth", g.queue_depth);
  header(out, "ringlm_slots_active", "gauge", "Slots running a generation.");
  sample(out, "ringlm_slots_active", g.slots_active);
  header(out, "ringlm_slots_total", "gauge", "Generation slots.");
  sample(out, "ringlm_slots_total", g.slots_total);
  header(out, "ringlm_kv_tokens_used", "gauge", "KV cache tokens held across all slots.");
  sample(out, "ringlm_kv_tokens_used", static_cast<double>(g.kv_used));
  header(out, "ringlm_kv_tokens_capacity", "gauge", "KV cache capacity in tokens across all slots.");
  sample(out, "ringlm_kv_tokens_capacity", static_cast<double>(g.kv_capacity));
  if (g.batched) {
    header(out, "ringlm_batch_steps_total", "counter", "Batched forward passes (each advances every active sequence).");
    sample(out, "ringlm_batch_steps_total", static_cast<double>(g.batch_steps));
    header(out, "ringlm_batch_rows_total", "counter", "Token rows run over all batched passes.");
    sample(out, "ringlm_batch_rows_total", static_cast<double>(g.batch_rows));
    header(out, "ringlm_batch_sequence_steps_total", "counter",
           "Sum over passes of the sequences advanced (divided by steps: the mean batch size).");
    sample(out, "ringlm_batch_sequence_steps_total", static_cast<double>(g.batch_sequence_steps));
    header(out, "ringlm_batch_size", "gauge", "Sequences advanced by the last batched pass.");
    sample(out, "ringlm_batch_size", g.batch_last);
    header(out, "ringlm_prefix_cache_hits_total", "counter", "Requests that reused cached prompt-prefix KV.");
    sample(out, "ringlm_prefix_cache_hits_total", static_cast<double>(g.prefix_hits));
    header(out, "ringlm_prefix_cache_misses_total", "counter",
           "Requests with at least one whole 16-token prompt block that reused no cached KV.");
    sample(out, "ringlm_prefix_cache_misses_total", static_cast<double>(g.prefix_misses));
    header(out, "ringlm_prefix_cache_reused_tokens_total", "counter", "Prompt tokens whose KV was reused, not recomputed.");
    sample(out, "ringlm_prefix_cache_reused_tokens_total", static_cast<double>(g.prefix_reused_tokens));
    header(out, "ringlm_prefix_cache_shared_hits_total", "counter",
           "Requests the shared prefix cache (--prefix-cache-mb) supplied prompt KV to.");
    sample(out, "ringlm_prefix_cache_shared_hits_total", static_cast<double>(g.prefix_store_hits));
    header(out, "ringlm_prefix_cache_shared_tokens_total", "counter", "Prompt tokens the shared prefix cache supplied.");
    sample(out, "ringlm_prefix_cache_shared_tokens_total", static_cast<double>(g.prefix_store_tokens));
    header(out, "ringlm_prefix_cache_evicted_blocks_total", "counter", "Prefix cache blocks dropped, least recently used first.");
    sample(out, "ringlm_prefix_cache_evicted_blocks_total", static_cast<double>(g.prefix_store_evicted));
    header(out, "ringlm_prefix_cache_bytes", "gauge", "KV bytes held by the shared prefix cache.");
    sample(out, "ringlm_prefix_cache_bytes", static_cast<double>(g.prefix_store_bytes));
    header(out, "ringlm_prefix_cache_max_bytes", "gauge", "The shared prefix cache's bound (--prefix-cache-mb).");
    sample(out, "ringlm_prefix_cache_max_bytes", static_cast<double>(g.prefix_store_max_bytes));
    header(out, "ringlm_prefix_cache_blocks", "gauge", "16-token blocks held by the shared prefix cache.");
    sample(out, "ringlm_prefix_cache_blocks", static_cast<double>(g.prefix_store_blocks));
    header(out, "ringlm_kv_bytes", "gauge", "KV cache bytes allocated (all slots).");
    sample(out, "ringlm_kv_bytes", static_cast<double>(g.kv_bytes));
  }
  if (g.grammar_cache) {
    header(out, "ringlm_grammar_cache_entries", "gauge", "Compiled schemas held by the grammar cache.");
    sample(out, "ringlm_grammar_cache_entries", static_cast<double>(g.grammar_entries));
    header(out, "ringlm_grammar_cache_bytes", "gauge",
           "Bytes the grammar cache holds: compiled grammars, their token masks and transition tables.");
    sample(out, "ringlm_grammar_cache_bytes", static_cast<double>(g.grammar_bytes));
    header(out, "ringlm_grammar_cache_max_bytes", "gauge", "The grammar cache's bound (--grammar-cache-mb).");
    sample(out, "ringlm_grammar_cache_max_bytes", static_cast<double>(g.grammar_max_bytes));
    header(out, "ringlm_grammar_cache_hits_total", "counter", "Schemas found compiled in the cache.");
    sample(out, "ringlm_grammar_cache_hits_total", static_cast<double>(g.grammar_hits));
    header(out, "ringlm_grammar_cache_misses_total", "counter", "Schemas compiled (not in the cache).");
    sample(out, "ringlm_grammar_cache_misses_total", static_cast<double>(g.grammar_misses));
    header(out, "ringlm_grammar_cache_evictions_total", "counter", "Compiled schemas dropped, least recently used first.");
    sample(out, "ringlm_grammar_cache_evictions_total", static_cast<double>(g.grammar_evictions));
  }
  return out;
}

}  // namespace ringlm::server
