// POST /v1/embeddings (and /embeddings), in OpenAI's request and response shapes:
//   {input: "text" | ["text", ...] | [id, ...] | [[id, ...], ...], encoding_format: "float" | "base64",
//    dimensions?: the model's width only, model?: ignored}
//   -> {object: "list", data: [{object: "embedding", index, embedding}], model, usage}
// An embedding is the mean over the input's tokens of the model's final-normed hidden state
// (the row the LM head reads), L2-normalized: llama.cpp's `--pooling mean`. Each input is one
// job on the scheduler (engine::GenerationParams::embedding): it is prefilled by the same
// batched forward pass as every prompt, beside the other requests in flight, and generates
// nothing. Gemma 4 -it is a chat model, not one trained for embeddings (docs/server.md).
#include <httplib.h>

#include <cmath>
#include <cstring>

#include "server/access.h"
#include "server/api_error.h"
#include "server/client_socket.h"
#include "server/http_server.h"
#include "server/request.h"
#include "server/response.h"
#include "server/stream.h"

namespace ringlm::server {

using json = nlohmann::ordered_json;

namespace {

// The most inputs one request may hold (OpenAI's limit).
constexpr std::size_t kMaxInputs = 2048;

// Standard base64 (RFC 4648 section 4) with padding.
std::string encode_base64(const unsigned char* data, std::size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (std::size_t i = 0; i < n; i += 3) {
    const std::uint32_t b = (std::uint32_t{data[i]} << 16) | (i + 1 < n ? std::uint32_t{data[i + 1]} << 8 : 0) |
                            (i + 2 < n ? std::uint32_t{data[i + 2]} : 0);
    out += kAlphabet[(b >> 18) & 63];
    out += kAlphabet[(b >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(b >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[b & 63] : '=';
  }
  return out;
}

// The vector as OpenAI's base64 encoding_format has it: the float32 values' little-endian bytes.
std::string floats_base64(const std::vector<float>& v) {
  std::vector<unsigned char> bytes(v.size() * 4);
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint32_t u;
    std::memcpy(&u, &v[i], 4);
    for (int k = 0; k < 4; ++k) bytes[i * 4 + static_cast<std::size_t>(k)] = static_cast<unsigned char>(u >> (8 * k));
  }
  return encode_base64(bytes.data(), bytes.size());
}

// Token ids of one input given as ids, checked against the vocabulary.
std::vector<std::int32_t> token_input(const json& ids, const std::string& at, long long vocab) {
  std::vector<std::int32_t> out;
  for (std::size_t j = 0; j < ids.size(); ++j) {
    const json& t = ids[j];
    if (!t.is_number_integer() || t.get<long long>() < 0 || t.get<long long>() >= vocab)
      throw ApiError(400, "'" + at + "[" + std::to_string(j) + "]' must be a token id in [0, " + std::to_string(vocab) + ")",
                     at + "[" + std::to_string(j) + "]", "invalid_value");
    out.push_back(static_cast<std::int32_t>(t.get<long long>()));
  }
  return out;
}

// The request's inputs as token lists: strings are tokenized as a completion prompt is (BOS
// first when the model has one), ids are taken as they are.
std::vector<std::vector<std::int32_t>> parse_inputs(const json& body, Backend& backend) {
  auto it = body.find("input");
  std::string name = "input";
  if (it == body.end()) {  // llama-server's /embedding field
    it = body.find("content");
    name = "content";
  }
  if (it == body.end() || it->is_null())
    throw ApiError(400, "'input' is required: a string, an array of strings, or token ids", "input", "invalid_value");
  const json& in = *it;
  const long long vocab = backend.vocab_size();
  std::vector<std::vector<std::int32_t>> out;
  auto text = [&](const json& s, const std::string& at) {
    if (s.get_ref<const std::string&>().empty()) throw ApiError(400, "'" + at + "' is an empty string", at, "invalid_value");
    out.push_back(backend.tokenize(s.get<std::string>()));
  };
  if (in.is_string()) {
    text(in, name);
    return out;
  }
  if (!in.is_array())
    throw ApiError(400, "'" + name + "' must be a string, an array of strings, or token ids", name, "invalid_value");
  if (in.empty()) throw ApiError(400, "'" + name + "' is an empty array", name, "invalid_value");
  if (in.size() > kMaxInputs)
    throw ApiError(400, "'" + name + "' holds " + std::to_string(in.size()) + " inputs; at most " + std::to_string(kMaxInputs),
                   name, "invalid_value");
  if (in[0].is_number()) {  // one input given as token ids
    out.push_back(token_input(in, name, vocab));
    return out;
  }
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::string at = name + "[" + std::to_string(i) + "]";
    if (in[i].is_string()) {
      text(in[i], at);
    } else if (in[i].is_array()) {
      if (in[i].empty()) throw ApiError(400, "'" + at + "' is an empty array of token ids", at, "invalid_value");
      out.push_back(token_input(in[i], at, vocab));
    } else {
      throw ApiError(400, "'" + at + "' must be a string or an array of token ids", at, "invalid_value");
    }
  }
  return out;
}

// L2-normalized in double; a zero vector stays zero.
void normalize(std::vector<float>& v) {
  double sum = 0.0;
  for (float x : v) sum += static_cast<double>(x) * x;
  if (sum <= 0.0) return;
  const double inv = 1.0 / std::sqrt(sum);
  for (float& x : v) x = static_cast<float>(x * inv);
}

}  // namespace

void HttpServer::handle_embeddings(const httplib::Request& req, httplib::Response& res) {
  if (scheduler_->draining()) throw ApiError(503, "server is shutting down", "", "shutting_down");
  const json body = parse_body(req.body);
  std::string format = "float";
  if (auto f = body.find("encoding_format"); f != body.end() && !f->is_null()) {
    if (!f->is_string() || (*f != "float" && *f != "base64"))
      throw ApiError(400, "'encoding_format' must be \"float\" or \"base64\"", "encoding_format", "invalid_value");
    format = f->get<std::string>();
  }
  const json* dimensions = body.contains("dimensions") && !body["dimensions"].is_null() ? &body["dimensions"] : nullptr;
  if (dimensions && (!dimensions->is_number_integer() || dimensions->get<long long>() < 1))
    throw ApiError(400, "'dimensions' must be a positive integer", "dimensions", "invalid_value");
  const std::vector<std::vector<std::int32_t>> inputs = parse_inputs(body, backend_);
  // A prompt fills the KV cache up to its last position: the context length is the limit.
  const std::size_t limit = static_cast<std::size_t>(backend_.context_length());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].size() > limit)
      throw ApiError(400, "input " + std::to_string(i) + " is " + std::to_string(inputs[i].size()) +
                              " tokens long; the limit is the context length of " + std::to_string(limit) + " tokens",
                     inputs.size() == 1 && body.contains("input") && body["input"].is_string() ? "input"
                                                                                               : "input[" + std::to_string(i) + "]",
                     "context_length_exceeded");

  engine::GenerationParams params;
  params.embedding = true;
  params.max_tokens = 0;
  params.draft_max_request = 0;  // nothing is decoded, so nothing is drafted
  const int fd = find_connection_fd(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  json data = json::array();
  long long prompt_tokens = 0;
  // In waves of at most one job per slot: a long array neither fills the queue (429) nor
  // holds more than the slots it can use; each wave runs batched.
  const std::size_t wave = static_cast<std::size_t>(std::max(1, scheduler_->slots()));
  for (std::size_t start = 0; start < inputs.size(); start += wave) {
    std::vector<std::shared_ptr<Job>> jobs;
    try {
      for (std::size_t i = start; i < std::min(inputs.size(), start + wave); ++i) {
        jobs.push_back(std::make_shared<Job>(inputs[i], params));
        scheduler_->submit(jobs.back());
      }
    } catch (...) {
      for (auto& j : jobs) j->cancel();
      throw;
    }
    std::vector<std::vector<engine::TokenEvent>> events;
    if (!await_choices(jobs, fd, false, events)) {
      res.status = 499;
      return;
    }
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      const engine::GenerationResult& r = jobs[k]->result();
      if (r.embedding.empty())
        throw ApiError(501, "this server's backend computes no embeddings", "", "unsupported", "invalid_request_error");
      std::vector<float> v = r.embedding;
      if (dimensions && dimensions->get<long long>() != static_cast<long long>(v.size()))
        throw ApiError(400, "'dimensions' must be this model's width, " + std::to_string(v.size()) +
                                " (embeddings are not shortened)", "dimensions", "invalid_value");
      normalize(v);
      json e = {{"object", "embedding"}, {"index", start + k}};
      if (format == "base64") e["embedding"] = floats_base64(v);
      else e["embedding"] = v;
      data.push_back(std::move(e));
      prompt_tokens += r.prompt_tokens;
    }
  }
  access_tokens(static_cast<int>(prompt_tokens), 0);
  json out = {{"object", "list"},
              {"data", std::move(data)},
              {"model", backend_.model_id()},
              {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  res.set_content(dump_json(out), "application/json");
}

}  // namespace ringlm::server
