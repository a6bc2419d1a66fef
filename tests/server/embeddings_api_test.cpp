// POST /v1/embeddings: the OpenAI shape, input forms, base64, validation naming the field,
// the API key and CORS (over the fake backend); and on the real engine with a tiny random
// model, that a vector is the L2-normalized mean of the final-normed hidden states, checked
// against an independent computation: the same model run token by token through
// model::Session (LogitsMode::Hidden, the state the LM head reads), pooled in double.
// (tests/server/embeddings_reference_test.py checks it against the float64 numpy reference.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine/engine.h"
#include "model/model.h"
#include "model/testing/test_checkpoint.h"
#include "server/content_parts.h"
#include "server/engine_backend.h"
#include "server_fixture.h"

namespace ringlm::server::testing {
namespace {

namespace fs = std::filesystem;

std::vector<double> as_vector(const json& e) {
  std::vector<double> v;
  for (const auto& x : e) v.push_back(x.get<double>());
  return v;
}

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

class EmbeddingsApi : public ServerTest {
 protected:
  void SetUp() override {
    ServerOptions so;
    so.cors_origin = "http://app.example";
    FakeBackendOptions fo;
    fo.context_length = 64;
    fo.token_delay = std::chrono::microseconds(0);
    start(fo, so);
  }
};

TEST_F(EmbeddingsApi, OpenAiShapeForEveryInputForm) {
  const json inputs[] = {"hello", json::array({"hello", "other text", "hello"}), json::array({104, 101, 108}),
                         json::array({json::array({104, 105}), json::array({33})})};
  const std::size_t counts[] = {1, 3, 1, 2};
  for (std::size_t k = 0; k < std::size(inputs); ++k) {
    SCOPED_TRACE(inputs[k].dump());
    for (const char* path : {"/v1/embeddings", "/embeddings"}) {
      auto r = post(path, {{"input", inputs[k]}, {"model", "anything"}});
      ASSERT_EQ(r.status, 200) << r.body;
      EXPECT_EQ(r.j["object"], "list");
      EXPECT_EQ(r.j["model"], "ringlm-fake");
      ASSERT_EQ(r.j["data"].size(), counts[k]);
      long long tokens = 0;
      for (std::size_t i = 0; i < counts[k]; ++i) {
        const json& d = r.j["data"][i];
        EXPECT_EQ(d["object"], "embedding");
        EXPECT_EQ(d["index"], i);
        const std::vector<double> v = as_vector(d["embedding"]);
        EXPECT_EQ(v.size(), 16u);
        EXPECT_NEAR(norm(v), 1.0, 1e-6);
      }
      for (const json& t : inputs[k].is_string() ? json::array({inputs[k]}) : inputs[k])
        tokens += t.is_string() ? static_cast<long long>(t.get<std::string>().size()) : t.is_array() ? t.size() : 0;
      if (k == 2) tokens = 3;
      EXPECT_EQ(r.j["usage"]["prompt_tokens"], tokens);
      EXPECT_EQ(r.j["usage"]["total_tokens"], tokens);
    }
  }
  // Same input, same vector; different inputs, different vectors (indexes keep the order).
  auto r = post("/v1/embeddings", {{"input", {"hello", "other text", "hello"}}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.j["data"][0]["embedding"], r.j["data"][2]["embedding"]);
  EXPECT_GT(max_abs_diff(as_vector(r.j["data"][0]["embedding"]), as_vector(r.j["data"][1]["embedding"])), 1e-3);
  // llama-server's field name.
  auto c = post("/embeddings", {{"content", "hello"}});
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.j["data"][0]["embedding"], r.j["data"][0]["embedding"]);
}

TEST_F(EmbeddingsApi, Base64IsTheFloat32LittleEndianBytes) {
  auto f = post("/v1/embeddings", {{"input", "round trip"}});
  auto b = post("/v1/embeddings", {{"input", "round trip"}, {"encoding_format", "base64"}});
  ASSERT_EQ(f.status, 200) << f.body;
  ASSERT_EQ(b.status, 200) << b.body;
  ASSERT_TRUE(b.j["data"][0]["embedding"].is_string());
  std::string bytes;
  ASSERT_TRUE(decode_base64(b.j["data"][0]["embedding"].get<std::string>(), bytes));
  const json& floats = f.j["data"][0]["embedding"];
  ASSERT_EQ(bytes.size(), floats.size() * 4);
  for (std::size_t i = 0; i < floats.size(); ++i) {
    std::uint32_t u = 0;
    for (int k = 0; k < 4; ++k) u |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i * 4 + k])) << (8 * k);
    float x;
    std::memcpy(&x, &u, 4);
    EXPECT_EQ(x, floats[i].get<float>()) << "element " << i;
  }
}

TEST_F(EmbeddingsApi, BadInputIsRefusedNamingTheField) {
  struct Case {
    json body;
    std::string param;
    std::string says;
  };
  const std::string long_text(65, 'x');  // 65 tokens (one per byte); the context holds 64
  const Case cases[] = {
      {json::object(), "input", "required"},
      {{{"input", ""}}, "input", "empty"},
      {{{"input", json::array()}}, "input", "empty"},
      {{{"input", 5}}, "input", "string"},
      {{{"input", {"ok", 3.5}}}, "input[1]", "string or an array"},
      {{{"input", {"ok", ""}}}, "input[1]", "empty"},
      {{{"input", {json::array({1, 2}), json::array()}}}, "input[1]", "empty"},
      {{{"input", {json::array({1, 999})}}}, "input[0][1]", "[0, 256)"},
      {{{"input", {1, -2}}}, "input[1]", "token id"},
      {{{"input", long_text}}, "input", "context length of 64"},
      {{{"input", {"ok", long_text}}}, "input[1]", "65 tokens"},
      {{{"input", "x"}, {"encoding_format", "hex"}}, "encoding_format", "base64"},
      {{{"input", "x"}, {"dimensions", 8}}, "dimensions", "16"},
      {{{"input", "x"}, {"dimensions", "8"}}, "dimensions", "positive integer"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.body.dump());
    auto r = post("/v1/embeddings", c.body);
    const json e = expect_error(r, 400);
    EXPECT_EQ(e.value("param", json()), c.param) << r.body;
    EXPECT_NE(e.value("message", std::string()).find(c.says), std::string::npos) << r.body;
  }
  auto bad_json = request("POST", "/v1/embeddings", "{\"input\":");
  expect_error(bad_json, 400);
  // A 64-token input fits exactly.
  EXPECT_EQ(post("/v1/embeddings", {{"input", std::string(64, 'x')}}).status, 200);
}

TEST_F(EmbeddingsApi, CorsPreflightAllowsTheRoute) {
  httplib::Client c("127.0.0.1", port_);
  auto r = c.Options("/v1/embeddings", {{"Origin", "http://app.example"}, {"Access-Control-Request-Method", "POST"},
                                       {"Access-Control-Request-Headers", "content-type, x-stainless-os"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "http://app.example");
}

TEST(EmbeddingsAuth, NeedsTheApiKey) {
  FakeBackend backend;
  ServerOptions so;
  so.host = "127.0.0.1";
  so.port = 0;
  so.api_key = "k3y";
  HttpServer server(backend, so);
  const int port = server.start();
  httplib::Client c("127.0.0.1", port);
  auto no = c.Post("/v1/embeddings", R"({"input":"x"})", "application/json");
  ASSERT_TRUE(no);
  EXPECT_EQ(no->status, 401);
  auto yes = c.Post("/v1/embeddings", {{"Authorization", "Bearer k3y"}}, R"({"input":"x"})", "application/json");
  ASSERT_TRUE(yes);
  EXPECT_EQ(yes->status, 200) << yes->body;
  server.stop();
  server.wait();
}

// The real engine: width = hidden_size, unit length, deterministic, batched = alone, and the
// vector equals the token-by-token Session computation.
TEST(EmbeddingsEngine, MeanOfTheFinalNormedHiddenStates) {
  const fs::path dir = fs::temp_directory_path() / ("ringlm_embeddings_" + std::to_string(::getpid()));
  model::testing::TestCheckpointOptions o;
  o.preset = "tiny";
  o.seed = 7;
  o.tokenizer_dir = fs::path(RINGLM_TOKENIZER_DIR);
  model::testing::write_test_checkpoint(dir, o);
  {
    BackendOptions bo;
    bo.engine.model_dir = dir;
    bo.engine.context_tokens = 256;
    bo.slots = 2;
    auto backend = make_engine_backend(bo);
    ServerOptions so;
    so.host = "127.0.0.1";
    so.port = 0;
    HttpServer server(*backend, so);
    const int port = server.start();
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60);
    auto call = [&](const json& input) {
      auto r = c.Post("/v1/embeddings", json{{"input", input}}.dump(), "application/json");
      EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
      return r ? json::parse(r->body) : json();
    };
    // A long text crosses the 64-token prefill chunk.
    std::string long_text;
    for (int i = 0; i < 12; ++i) long_text += "ring buffers hold tokens " + std::to_string(i) + ". ";
    const std::vector<std::int32_t> ids = backend->tokenize(long_text);
    ASSERT_GT(ids.size(), 64u);
    const json both = call({long_text, "a different sentence"});
    const json alone = call(long_text);
    const json as_ids = call(ids);
    const std::vector<double> v = as_vector(both["data"][0]["embedding"]);
    const std::vector<double> w = as_vector(both["data"][1]["embedding"]);
    engine::EngineOptions eo = bo.engine;
    engine::Engine engine(eo);
    ASSERT_EQ(v.size(), static_cast<std::size_t>(engine.model()->config().hidden_size));
    EXPECT_NEAR(norm(v), 1.0, 1e-6);
    EXPECT_EQ(both["usage"]["prompt_tokens"], ids.size() + backend->tokenize("a different sentence").size());
    EXPECT_LT(max_abs_diff(v, as_vector(alone["data"][0]["embedding"])), 1e-6) << "batched differs from alone";
    EXPECT_EQ(alone["data"][0]["embedding"], as_ids["data"][0]["embedding"]) << "text and its ids differ";
    EXPECT_EQ(call(long_text)["data"][0]["embedding"], alone["data"][0]["embedding"]) << "not deterministic";
    EXPECT_GT(max_abs_diff(v, w), 1e-2) << "two inputs gave the same vector";

    // Independent: one token at a time through a plain Session, the LM head's input pooled in double.
    model::Session session(engine.model(), model::SessionOptions{.context_tokens = 256});
    std::vector<double> mean(v.size(), 0.0);
    for (std::size_t t = 0; t < ids.size(); ++t) {
      session.decode_hidden(ids[t], static_cast<std::int64_t>(t));
      const std::span<const float> h = session.head_input();
      for (std::size_t j = 0; j < mean.size(); ++j) mean[j] += h[j] / static_cast<double>(ids.size());
    }
    const double n = norm(mean);
    for (double& x : mean) x /= n;
    double dot = 0;
    for (std::size_t j = 0; j < v.size(); ++j) dot += v[j] * mean[j];
    EXPECT_GT(dot, 0.99999) << "cosine to the token-by-token computation";
    EXPECT_LT(max_abs_diff(v, mean), 2e-3);
    // The last token's state alone is something else (the pooling is the mean).
    std::vector<double> last(session.head_input().begin(), session.head_input().end());
    const double ln = norm(last);
    for (double& x : last) x /= ln;
    EXPECT_GT(max_abs_diff(v, last), 1e-2);
    server.stop();
    server.wait();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ringlm::server::testing
