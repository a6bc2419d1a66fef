// `import ringlm`: the engine from Python (pybind11). One Engine holds the model; each call
// runs on one Generator (KV session) owned by the Engine object, so consecutive calls with a
// shared prefix reuse its KV cache, as the CLI chat does. The GIL is released while tokens
// are computed; errors arrive as ringlm.Error with the engine's own message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/batch_job.h"
#include "engine/generator.h"
#include "guided/validator.h"
#include "sampling/sampler.h"
#include "util/error.h"

namespace py = pybind11;
using Json = nlohmann::ordered_json;

namespace {

// Python object -> JSON via the json module (dicts keep their insertion order).
Json to_json(const py::handle& obj) {
  if (py::isinstance<py::str>(obj)) return Json::parse(obj.cast<std::string>());
  const std::string text = py::module_::import("json").attr("dumps")(obj).cast<std::string>();
  return Json::parse(text);
}
py::object from_json(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

struct Sampling {
  float temperature = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repeat_penalty = 1.0f;
  unsigned long long seed = 0;
  int max_tokens = 256;
  std::vector<std::string> stop;
  std::string json_schema;  // text

  ringlm::engine::GenerationParams params() const {
    ringlm::engine::GenerationParams p;
    p.sampling.temperature = temperature;
    p.sampling.top_k = top_k;
    p.sampling.top_p = top_p;
    p.sampling.min_p = min_p;
    p.sampling.repetition_penalty = repeat_penalty;
    p.sampling.seed = seed;
    p.max_tokens = max_tokens;
    p.stop = stop;
    p.json_schema = json_schema;
    ringlm::sampling::check_sampler_params(p.sampling);  // the rule every front end shares (raises ringlm.Error)
    return p;
  }
};

Sampling sampling_from(const py::kwargs& kw) {
  Sampling s;
  for (auto [k, v] : kw) {
    const std::string key = k.cast<std::string>();
    if (key == "temperature") s.temperature = v.cast<float>();
    else if (key == "top_k") s.top_k = v.cast<int>();
    else if (key == "top_p") s.top_p = v.cast<float>();
    else if (key == "min_p") s.min_p = v.cast<float>();
    else if (key == "repeat_penalty") s.repeat_penalty = v.cast<float>();
    else if (key == "seed") s.seed = v.cast<unsigned long long>();
    else if (key == "max_tokens") s.max_tokens = v.cast<int>();
    else if (key == "stop") s.stop = py::isinstance<py::str>(v) ? std::vector<std::string>{v.cast<std::string>()} : v.cast<std::vector<std::string>>();
    else if (key == "json_schema") { if (!v.is_none()) s.json_schema = to_json(v).dump(); }
    else throw py::type_error("unexpected keyword argument '" + key +
                              "' (sampling: temperature, top_k, top_p, min_p, repeat_penalty, seed, max_tokens, stop, json_schema)");
  }
  return s;
}

class PyEngine;

// Tokens of one generation handed from the worker thread to the Python iterator.
class TokenStream {
 public:
  TokenStream(PyEngine& owner, std::vector<std::int32_t> ids, ringlm::engine::GenerationParams params);
  ~TokenStream() { close(); }
  std::string next();  // raises StopIteration at the end, ringlm.Error on failure
  void close();
  py::dict result() const;

 private:
  PyEngine& owner_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> pieces_;
  bool done_ = false, cancel_ = false;
  std::size_t streamed_ = 0;
  std::optional<std::string> error_;
  ringlm::engine::GenerationResult result_;
  std::thread worker_;
};

class PyEngine {
 public:
  PyEngine(const std::string& model, int threads, int ctx, const std::string& weights, const std::string& activations)
      : engine_(options(model, threads, ctx, weights, activations)), gen_(engine_) {}

  static ringlm::engine::EngineOptions options(const std::string& model, int threads, int ctx, const std::string& weights,
                                               const std::string& activations) {
    ringlm::engine::EngineOptions o;
    o.model_dir = model;
    o.threads = threads;
    o.context_tokens = ctx;
    if (weights == "q4_0") o.weights = ringlm::model::WeightFormat::q4_0;
    else if (weights == "stored") o.weights = ringlm::model::WeightFormat::stored;
    else ringlm::fail("weights: '", weights, "' is not q4_0 or stored");
    if (activations == "int8x2") o.activations = ringlm::kernels::Q4Activations::int8x2;
    else if (activations == "int8") o.activations = ringlm::kernels::Q4Activations::int8;
    else if (activations == "f32") o.activations = ringlm::kernels::Q4Activations::f32;
    else ringlm::fail("activations: '", activations, "' is not int8x2, int8 or f32");
    return o;
  }

  std::vector<std::int32_t> chat_ids(const Json& messages) {
    ringlm::chat::ChatRequest req;
    req.messages = messages;
    req.add_generation_prompt = true;
    return engine_.tokenizer().encode(engine_.render_chat(req));
  }
  Json user_turn(const std::string& prompt, const std::string& system) {
    Json m = Json::array();
    if (!system.empty()) m.push_back({{"role", "system"}, {"content", system}});
    m.push_back({{"role", "user"}, {"content", prompt}});
    return m;
  }

  ringlm::engine::GenerationResult run(const std::vector<std::int32_t>& ids, const ringlm::engine::GenerationParams& p,
                                       const ringlm::engine::TokenCallback& cb = nullptr) {
    std::lock_guard lock(busy_);  // one generation at a time on this engine's session
    return gen_.generate(ids, p, cb);
  }

  std::string generate(const std::string& prompt, const std::string& system, const py::kwargs& kw) {
    const auto params = sampling_from(kw).params();
    const auto ids = chat_ids(user_turn(prompt, system));
    py::gil_scoped_release nogil;
    return run(ids, params).text;
  }

  std::unique_ptr<TokenStream> stream(const std::string& prompt, const std::string& system, const py::kwargs& kw) {
    return std::make_unique<TokenStream>(*this, chat_ids(user_turn(prompt, system)), sampling_from(kw).params());
  }

  std::string chat(const py::object& messages, const py::kwargs& kw) {
    const auto params = sampling_from(kw).params();
    const auto ids = chat_ids(to_json(messages));
    py::gil_scoped_release nogil;
    return run(ids, params).text;
  }

  py::object guided(const std::string& prompt, const py::object& schema, const std::string& system, py::kwargs kw) {
    kw["json_schema"] = schema;
    const std::string text = generate(prompt, system, kw);
    try {
      return from_json(text);
    } catch (const py::error_already_set&) {
      ringlm::fail("the reply is not complete JSON (raise max_tokens?): ", text.substr(0, 200));
    }
  }

  // Each row (a str, or a dict rendered through `template`) becomes one guided generation;
  // returns the parsed, validated objects in row order.
  py::list extract(const py::iterable& rows, const py::object& schema, const std::string& instructions,
                   const std::string& tmpl, py::kwargs kw) {
    const Json schema_json = to_json(schema);
    ringlm::guided::Validator validator(schema_json);
    kw["json_schema"] = schema;
    const auto params = sampling_from(kw).params();
    const Json system = {{"role", "system"}, {"content", instructions + "\n" + schema_json.dump()}};
    std::vector<std::vector<std::int32_t>> prompts;
    for (const auto& row : rows) {
      const std::string user = py::isinstance<py::str>(row) ? row.cast<std::string>()
                                                            : ringlm::engine::fill_prompt_template(tmpl, to_json(row));
      prompts.push_back(chat_ids(Json::array({system, {{"role", "user"}, {"content", user}}})));
    }
    py::list out;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      ringlm::engine::GenerationResult r;
      {
        py::gil_scoped_release nogil;
        r = run(prompts[i], params);
      }
      Json value = Json::parse(r.text, nullptr, false);
      if (value.is_discarded())
        ringlm::fail("row ", i, ": the reply is not complete JSON (finish: ", ringlm::engine::finish_reason_name(r.finish),
                     "; raise max_tokens?): ", r.text.substr(0, 200));
      std::string why;
      if (!validator.validate(value, &why)) ringlm::fail("row ", i, ": the reply does not validate against the schema: ", why);
      out.append(from_json(r.text));
    }
    return out;
  }

  std::vector<std::int32_t> tokenize(const std::string& text) { return engine_.tokenizer().encode(text); }
  std::string detokenize(const std::vector<std::int32_t>& ids) { return engine_.tokenizer().decode(ids); }
  void reset() {
    std::lock_guard lock(busy_);
    gen_.reset();
  }
  int context_length() { return gen_.session().context_capacity(); }

 private:
  ringlm::engine::Engine engine_;
  ringlm::engine::Generator gen_;
  std::mutex busy_;
};

TokenStream::TokenStream(PyEngine& owner, std::vector<std::int32_t> ids, ringlm::engine::GenerationParams params)
    : owner_(owner) {
  worker_ = std::thread([this, ids = std::move(ids), params = std::move(params)] {
    try {
      auto r = owner_.run(ids, params, [this](const ringlm::engine::TokenEvent& e) {
        std::lock_guard lock(mu_);
        if (!e.text.empty()) pieces_.push_back(e.text);
        streamed_ += e.text.size();
        cv_.notify_one();
        return !cancel_;
      });
      std::lock_guard lock(mu_);
      // Text held back until the end (an unfinished stop-string candidate) comes last.
      if (r.text.size() > streamed_) pieces_.push_back(r.text.substr(streamed_));
      result_ = std::move(r);
    } catch (const std::exception& e) {
      std::lock_guard lock(mu_);
      error_ = e.what();
    }
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_one();
  });
}

std::string TokenStream::next() {
  std::unique_lock lock(mu_);
  {
    py::gil_scoped_release nogil;
    cv_.wait(lock, [this] { return !pieces_.empty() || done_; });
  }
  if (!pieces_.empty()) {
    std::string s = std::move(pieces_.front());
    pieces_.pop_front();
    return s;
  }
  if (error_) throw ringlm::Error(*error_);
  throw py::stop_iteration();
}

void TokenStream::close() {
  {
    std::lock_guard lock(mu_);
    cancel_ = true;
  }
  if (worker_.joinable()) {
    py::gil_scoped_release nogil;
    worker_.join();
  }
}

py::dict TokenStream::result() const {
  py::dict d;
  d["text"] = result_.text;
  d["finish"] = ringlm::engine::finish_reason_name(result_.finish);
  d["prompt_tokens"] = result_.prompt_tokens;
  d["completion_tokens"] = result_.completion_tokens;
  return d;
}

}  // namespace

PYBIND11_MODULE(ringlm, m) {
  m.doc() = "ringlm: a native runtime for Gemma 4 on-device models (generation, chat, JSON-Schema-guided extraction)";
  static py::exception<ringlm::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ringlm::Error& e) {
      // Messages quote model output and file names, which may hold broken UTF-8 (a reply
      // cut at 200 bytes); PyErr_SetString would then raise an Error without its message.
      const char* what = e.what();
      py::object msg = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(what, std::strlen(what), "replace"));
      PyErr_SetObject(error.ptr(), msg.ptr());
    }
  });

  py::class_<TokenStream>(m, "TokenStream", "Iterator over the text pieces of one streamed generation")
      .def("__iter__", [](TokenStream& s) -> TokenStream& { return s; })
      .def("__next__", &TokenStream::next)
      .def("close", &TokenStream::close, "Stop the generation (also when the iterator is dropped)")
      .def_property_readonly("result", &TokenStream::result, "finish reason and token counts, once iteration ended");

  py::class_<PyEngine>(m, "Engine", R"(A loaded model.

    Engine(model, threads=0, ctx=0, weights="q4_0", activations="int8x2")

model: a checkpoint directory (Hugging Face layout or `ringlm convert` output) or a .gguf
file. threads=0 uses every core; ctx=0 is the model's default context.
Sampling keywords of every call: temperature (0 = greedy), top_k, top_p, min_p,
repeat_penalty, seed, max_tokens (256), stop (str or list), json_schema (dict or JSON text).)")
      .def(py::init<const std::string&, int, int, const std::string&, const std::string&>(), py::arg("model"),
           py::arg("threads") = 0, py::arg("ctx") = 0, py::arg("weights") = "q4_0", py::arg("activations") = "int8x2")
      .def("generate", &PyEngine::generate, py::arg("prompt"), py::arg("system") = "",
           "Reply to one user message (through the chat template); returns the text")
      .def("stream", &PyEngine::stream, py::arg("prompt"), py::arg("system") = "",
           "Like generate(), as an iterator of text pieces")
      .def("chat", &PyEngine::chat, py::arg("messages"),
           "Reply to a conversation: a list of {'role': ..., 'content': ...} dicts; returns the text")
      .def("guided", &PyEngine::guided, py::arg("prompt"), py::arg("schema"), py::arg("system") = "",
           "Reply constrained to a JSON Schema (dict or text); returns the parsed value")
      .def("extract", &PyEngine::extract, py::arg("rows"), py::arg("schema"),
           py::arg("instructions") = "Extract the requested fields from the user's message. Reply with one JSON object "
                                     "that follows this JSON Schema:",
           py::arg("template") = "{text}",
           "One guided generation per row (str, or dict filled into `template`); returns the validated dicts")
      .def("tokenize", &PyEngine::tokenize, py::arg("text"))
      .def("detokenize", &PyEngine::detokenize, py::arg("ids"))
      .def("reset", &PyEngine::reset, "Forget the KV cache")
      .def_property_readonly("context_length", &PyEngine::context_length);
}
