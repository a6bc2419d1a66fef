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

// One metric with a single sample: its HELP/TYPE header and its value.
void metric(std::string& out, const char* name, const char* type, const char* help, double value) {
  header(out, name, type, help);
  sample(out, name, value);
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
    metric(out, "ringlm_prompt_tokens_total", "counter", "Prompt tokens of finished generations.",
           static_cast<double>(prompt_tokens_));
    metric(out, "ringlm_completion_tokens_total", "counter", "Generated tokens.",
           static_cast<double>(completion_tokens_));
    metric(out, "ringlm_generations_cancelled_total", "counter",
           "Generations cancelled (client disconnected or server shutting down).",
           static_cast<double>(cancelled_));
    metric(out, "ringlm_queue_rejections_total", "counter", "Requests refused with 429 because the queue was full.",
           static_cast<double>(rejected_));
  }
  header(out, "ringlm_time_to_first_token_seconds", "histogram", "Time from admission to the first generated token.");
  ttft_.render("ringlm_time_to_first_token_seconds", out);
  header(out, "ringlm_inter_token_latency_seconds", "histogram", "Time between consecutive generated tokens.");
  inter_token_.render("ringlm_inter_token_latency_seconds", out);
  header(out, "ringlm_request_duration_seconds", "histogram", "Generation request wall time, queue wait included.");
  duration_.render("ringlm_request_duration_seconds", out);
  metric(out, "ringlm_queue_depth", "gauge", "Requests waiting for a free slot.",
         g.queue_depth);
  metric(out, "ringlm_slots_active", "gauge", "Slots running a generation.",
         g.slots_active);
  metric(out, "ringlm_slots_total", "gauge", "Generation slots.",
         g.slots_total);
  metric(out, "ringlm_kv_tokens_used", "gauge", "KV cache tokens held across all slots.",
         static_cast<double>(g.kv_used));
  metric(out, "ringlm_kv_tokens_capacity", "gauge", "KV cache capacity in tokens across all slots.",
         static_cast<double>(g.kv_capacity));
  metric(out, "ringlm_media_bytes_in_use", "gauge",
         "Estimated bytes held by requests decoding or encoding images and audio now (--media-memory-mb bounds it).",
         static_cast<double>(g.media_bytes_in_use));
  metric(out, "ringlm_media_max_bytes", "gauge", "The media budget (--media-memory-mb).",
         static_cast<double>(g.media_max_bytes));
  metric(out, "ringlm_media_active", "gauge", "Requests decoding or encoding media now (--media-concurrency bounds it).",
         g.media_active);
  metric(out, "ringlm_media_refused_total", "counter", "Requests refused 413/429 by the media budget.",
         static_cast<double>(g.media_refused));
  if (g.batched) {
    metric(out, "ringlm_batch_steps_total", "counter", "Batched forward passes (each advances every active sequence).",
           static_cast<double>(g.batch_steps));
    metric(out, "ringlm_batch_rows_total", "counter", "Token rows run over all batched passes.",
           static_cast<double>(g.batch_rows));
    metric(out, "ringlm_batch_sequence_steps_total", "counter",
           "Sum over passes of the sequences advanced (divided by steps: the mean batch size).",
           static_cast<double>(g.batch_sequence_steps));
    metric(out, "ringlm_batch_size", "gauge", "Sequences advanced by the last batched pass.",
           g.batch_last);
    metric(out, "ringlm_draft_tokens_total", "counter", "Speculative decoding: drafted tokens verified (--draft).",
           static_cast<double>(g.drafted_tokens));
    metric(out, "ringlm_draft_accepted_total", "counter", "Speculative decoding: drafted tokens accepted.",
           static_cast<double>(g.accepted_drafts));
    metric(out, "ringlm_prefix_cache_hits_total", "counter", "Requests that reused cached prompt-prefix KV.",
           static_cast<double>(g.prefix_hits));
    metric(out, "ringlm_prefix_cache_misses_total", "counter",
           "Requests with at least one whole 16-token prompt block that reused no cached KV.",
           static_cast<double>(g.prefix_misses));
    metric(out, "ringlm_prefix_cache_reused_tokens_total", "counter", "Prompt tokens whose KV was reused, not recomputed.",
           static_cast<double>(g.prefix_reused_tokens));
    metric(out, "ringlm_prefix_cache_shared_hits_total", "counter",
           "Requests the shared prefix cache (--prefix-cache-mb) supplied prompt KV to.",
           static_cast<double>(g.prefix_store_hits));
    metric(out, "ringlm_prefix_cache_shared_tokens_total", "counter", "Prompt tokens the shared prefix cache supplied.",
           static_cast<double>(g.prefix_store_tokens));
    metric(out, "ringlm_prefix_cache_evicted_blocks_total", "counter", "Prefix cache blocks dropped, least recently used first.",
           static_cast<double>(g.prefix_store_evicted));
    metric(out, "ringlm_prefix_cache_bytes", "gauge", "KV bytes held by the shared prefix cache.",
           static_cast<double>(g.prefix_store_bytes));
    metric(out, "ringlm_prefix_cache_max_bytes", "gauge", "The shared prefix cache's bound (--prefix-cache-mb).",
           static_cast<double>(g.prefix_store_max_bytes));
    metric(out, "ringlm_prefix_cache_blocks", "gauge", "16-token blocks held by the shared prefix cache.",
           static_cast<double>(g.prefix_store_blocks));
    metric(out, "ringlm_kv_bytes", "gauge", "KV cache bytes allocated (all slots).",
           static_cast<double>(g.kv_bytes));
  }
  if (g.grammar_cache) {
    metric(out, "ringlm_grammar_cache_entries", "gauge", "Compiled schemas held by the grammar cache.",
           static_cast<double>(g.grammar_entries));
    metric(out, "ringlm_grammar_cache_bytes", "gauge",
           "Bytes the grammar cache holds: compiled grammars, their token masks and transition tables.",
           static_cast<double>(g.grammar_bytes));
    metric(out, "ringlm_grammar_cache_max_bytes", "gauge", "The grammar cache's bound (--grammar-cache-mb).",
           static_cast<double>(g.grammar_max_bytes));
    metric(out, "ringlm_grammar_cache_hits_total", "counter", "Schemas found compiled in the cache.",
           static_cast<double>(g.grammar_hits));
    metric(out, "ringlm_grammar_cache_misses_total", "counter", "Schemas compiled (not in the cache).",
           static_cast<double>(g.grammar_misses));
    metric(out, "ringlm_grammar_cache_evictions_total", "counter", "Compiled schemas dropped, least recently used first.",
           static_cast<double>(g.grammar_evictions));
  }
  return out;
}

}  // namespace ringlm::server
