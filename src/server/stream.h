// Waiting for generation jobs and streaming them as server-sent events, shared by every
// generating route (/v1/chat/completions, /v1/completions, /v1/responses). A StreamFormat turns
// one reply's token events into the route's SSE text; serve_stream drives one or more jobs (the
// n choices of one request) through their formats on the connection's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/generation.h"
#include "server/metrics.h"
#include "server/scheduler.h"

namespace httplib {
struct Response;
}  // namespace httplib

namespace ringlm::server {

// How often a waiting request thread looks at its client's socket.
constexpr auto kPollInterval = std::chrono::milliseconds(50);

// The status a failed or cancelled job maps to; throws the ApiError for it.
[[noreturn]] void throw_job_error(const Job& job);
// True when the job ended with an error or was cancelled (then throw_job_error applies).
bool job_failed(const Job& job);

// Waits for a non-streaming job, cancelling it if the client disconnects meanwhile. Keeps the
// token events when `keep` is given. Returns false if the client went away.
bool await_job(Job& job, int fd, std::vector<engine::TokenEvent>* keep);

// Waits for each choice of a non-streaming request in turn (await_job), keeping each one's
// token events in events[i] when `keep_events`. Returns false if the client went away (every
// choice then cancelled and let go); throws the first failed choice's error after cancelling
// the others.
bool await_choices(const std::vector<std::shared_ptr<Job>>& jobs, int fd, bool keep_events,
                   std::vector<std::vector<engine::TokenEvent>>& events);

std::string join_text(const std::vector<engine::TokenEvent>& events);

// Turns one reply's token events into SSE text; one subclass per endpoint.
class StreamFormat {
 public:
  virtual ~StreamFormat() = default;
  virtual std::string begin() = 0;
  virtual std::string tokens(const std::vector<engine::TokenEvent>& events) = 0;
  // The reply's last events (the finish reason); no usage and no terminator.
  virtual std::string end(const engine::GenerationResult& r) = 0;
  // After every reply of the response has ended: usage over all of them (`total`) and the
  // stream's terminator ("data: [DONE]" for the chat and completion routes).
  virtual std::string close(const engine::GenerationResult& total) = 0;
  // A job failed after the stream began: the event that says so (the default is an
  // OpenAI error object as a data event).
  virtual std::string failure(const std::string& error_json);
};

// State one streamed response carries across content-provider calls: its jobs (the request's
// n choices, in index order) and one format per job.
struct Stream {
  std::vector<std::shared_ptr<Job>> jobs;
  std::vector<std::unique_ptr<StreamFormat>> formats;
  int fd = -1;
  std::chrono::steady_clock::time_point started;
  // Internal state of serve_stream.
  std::vector<engine::TokenEvent> first;  // job 0's events that arrived before the headers went out
  bool first_done = false;
  bool begun = false;
  bool finished = false;
  std::vector<bool> ended;  // per job: its end() has been sent
};

// Streams the jobs as SSE, or answers with an error status if job 0 fails before its first
// token (the headers are held back until then, so a request the engine rejects - a schema
// that does not compile - still gets a proper status). Throws ApiError for that case.
void serve_stream(httplib::Response& res, std::shared_ptr<Stream> st, std::atomic<int>& open_streams, Metrics& metrics);

// Sum of the results of a request's jobs (prompt counted once, as OpenAI's usage for n > 1).
engine::GenerationResult combined_result(const std::vector<std::shared_ptr<Job>>& jobs);

}  // namespace ringlm::server
