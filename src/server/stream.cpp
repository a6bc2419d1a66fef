#include "server/stream.h"

#include <httplib.h>

#include "server/access.h"
#include "server/api_error.h"
#include "server/client_socket.h"
#include "server/response.h"

namespace ringlm::server {

using engine::FinishReason;
using engine::GenerationResult;
using engine::TokenEvent;
using Clock = std::chrono::steady_clock;

bool job_failed(const Job& job) { return job.error_status() != 0 || job.result().finish == FinishReason::Cancelled; }

void throw_job_error(const Job& job) {
  if (job.error_status() != 0)
    throw ApiError(job.error_status(), job.error_message(), job.error_param(), job.error_code());
  throw ApiError(503, "server is shutting down; the generation was cancelled", "", "shutting_down");
}

bool await_job(Job& job, int fd, std::vector<TokenEvent>* keep) {
  std::vector<TokenEvent> batch;
  bool client_here = true;
  for (;;) {
    const bool done = job.take_events(batch, kPollInterval);
    if (keep) keep->insert(keep->end(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
    if (done) return client_here;
    if (client_here && peer_closed(fd)) {
      client_here = false;
      job.cancel();  // the worker stops at its next token; keep waiting for it to let go
    }
  }
}

bool await_choices(const std::vector<std::shared_ptr<Job>>& jobs, int fd, bool keep_events,
                   std::vector<std::vector<TokenEvent>>& events) {
  events.assign(jobs.size(), {});
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!await_job(*jobs[i], fd, keep_events ? &events[i] : nullptr)) {
      for (auto& j : jobs) j->cancel();
      for (auto& j : jobs) await_job(*j, -1, nullptr);
      return false;
    }
    if (job_failed(*jobs[i])) {
      for (auto& j : jobs) j->cancel();
      throw_job_error(*jobs[i]);
    }
  }
  return true;
}

std::string join_text(const std::vector<TokenEvent>& events) {
  std::string s;
  for (const auto& ev : events) s += ev.text;
  return s;
}

std::string StreamFormat::failure(const std::string& error_json) { return "data: " + error_json + "\n\n"; }

GenerationResult combined_result(const std::vector<std::shared_ptr<Job>>& jobs) {
  GenerationResult total = jobs.at(0)->result();
  for (std::size_t i = 1; i < jobs.size(); ++i) total.completion_tokens += jobs[i]->result().completion_tokens;
  return total;
}

namespace {

// The error event of a failed job, and the other jobs cancelled: one failure ends the response.
std::string fail_stream(Stream& st, const Job& job, StreamFormat& format) {
  for (auto& j : st.jobs) j->cancel();
  try {
    throw_job_error(job);
  } catch (const ApiError& e) {
    return format.failure(dump_json(e.to_json()));
  }
}

// One content-provider call: sends what the jobs produced since the last call. Returns false
// when the client is gone (the jobs are cancelled).
bool pump(Stream& st, httplib::DataSink& sink) {
  auto send = [&](const std::string& s) { return s.empty() || sink.write(s.data(), s.size()); };
  const std::size_t n = st.jobs.size();
  // With several jobs, each is looked at briefly in turn, so none waits on another's pace.
  const auto wait = n == 1 ? kPollInterval : std::chrono::milliseconds(5);
  std::vector<TokenEvent> events;
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (st.ended[i]) continue;
    bool done;
    if (!st.begun) {
      st.begun = true;
      for (auto& f : st.formats)
        if (!send(f->begin())) return false;
      events.swap(st.first);
      done = st.first_done;
    } else {
      done = st.jobs[i]->take_events(events, wait);
    }
    any = any || !events.empty() || done;
    if (!events.empty() && !send(st.formats[i]->tokens(events))) return false;
    if (!done) continue;
    st.ended[i] = true;
    if (job_failed(*st.jobs[i])) {
      st.finished = true;
      send(fail_stream(st, *st.jobs[i], *st.formats[i]));
      sink.done();
      return true;
    }
    if (!send(st.formats[i]->end(st.jobs[i]->result()))) return false;
  }
  bool all = true;
  for (bool e : st.ended) all = all && e;
  if (all) {
    const GenerationResult total = combined_result(st.jobs);
    access_tokens(total.prompt_tokens, total.completion_tokens);
    st.finished = true;
    if (!send(st.formats[0]->close(total))) return false;
    sink.done();
    return true;
  }
  return any || !peer_closed(st.fd);
}

}  // namespace

void serve_stream(httplib::Response& res, std::shared_ptr<Stream> st, std::atomic<int>& open_streams, Metrics& metrics) {
  Job& first_job = *st->jobs.at(0);
  st->ended.assign(st->jobs.size(), false);
  std::vector<TokenEvent> batch;
  for (;;) {
    st->first_done = first_job.take_events(batch, kPollInterval);
    st->first.insert(st->first.end(), batch.begin(), batch.end());
    if (st->first_done || !st->first.empty()) break;
    if (peer_closed(st->fd)) {
      for (auto& j : st->jobs) j->cancel();
      for (auto& j : st->jobs) await_job(*j, -1, nullptr);
      res.status = 499;  // client closed the request (nobody is reading this)
      return;
    }
  }
  if (st->first_done && job_failed(first_job)) {
    for (auto& j : st->jobs) j->cancel();
    throw_job_error(first_job);
  }
  ++open_streams;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [st](std::size_t, httplib::DataSink& sink) {
        if (pump(*st, sink)) return true;
        for (auto& j : st->jobs) j->cancel();
        return false;
      },
      [st, &open_streams, &metrics](bool) {
        if (!st->finished)
          for (auto& j : st->jobs) j->cancel();  // client gone or server stopping
        metrics.observe_request_duration(std::chrono::duration<double>(Clock::now() - st->started).count());
        --open_streams;
      });
}

}  // namespace ringlm::server
