// `import ringlm`: the engine from Python (pybind11). One Engine holds the model; each call
// runs on one Generator (KV session) owned by the Engine object, so consecutive calls with a
// shared prefix reuse its KV cache, as the CLI chat does. The GIL is released while tokens
// are computed; errors arrive as ringlm.Error with the engine's own message. A guided reply
// (json_schema) cut by max_tokens or the context raises ringlm.Error naming the limit: no
// call returns a cut-off value as if it were complete (extract() reports it per row).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/batch_job.h"
#include "chat/gemma_reply.h"
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
  std::string draft{ringlm::engine::kDefaultDraft};  // speculative decoding, as the CLI's --draft
  int draft_max = ringlm::engine::kDefaultDraftMax;

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
    p.draft = ringlm::engine::parse_draft(draft, draft_max);  // the CLI's parser (raises ringlm.Error)
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
    else if (key == "draft") s.draft = v.cast<std::string>();
    else if (key == "draft_max") s.draft_max = v.cast<int>();
    else throw py::type_error("unexpected keyword argument '" + key +
                              "' (sampling: temperature, top_k, top_p, min_p, repeat_penalty, seed, max_tokens, stop, "
                              "json_schema, draft, draft_max)");
  }
  return s;
}

// Raises ringlm.Error when a guided reply ended before its value was complete.
void check_guided(const ringlm::engine::GenerationResult& r, const ringlm::engine::GenerationParams& p, int ctx) {
  if (p.json_schema.empty() && p.tool_schemas.empty()) return;
  if (r.finish != ringlm::engine::FinishReason::Length) return;
  if (std::string(ringlm::engine::length_limit(r, p.max_tokens)) == "max_tokens")
    ringlm::fail("the reply was cut by max_tokens=", p.max_tokens, " before its JSON value was complete (raise max_tokens): ",
                 r.text.substr(0, 200));
  ringlm::fail("the reply was cut by the context (", ctx, " tokens) before its JSON value was complete: ", r.text.substr(0, 200));
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

  std::vector<std::int32_t> chat_ids(const Json& messages, const Json& tools = Json()) {
    ringlm::chat::ChatRequest req;
    req.messages = messages;
    req.tools = tools;
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
    ringlm::engine::GenerationResult r;
    {
      py::gil_scoped_release nogil;
      r = run(ids, params);
    }
    check_guided(r, params, context_length());
    return r.text;
  }

  std::unique_ptr<TokenStream> stream(const std::string& prompt, const std::string& system, const py::kwargs& kw) {
    return std::make_unique<TokenStream>(*this, chat_ids(user_turn(prompt, system)), sampling_from(kw).params());
  }

  // Without tools: the reply text. With tools (OpenAI's [{"type": "function", "function":
  // {...}}] list): the assistant message as a dict, {"role", "content", "tool_calls"}, whose
  // calls carry their arguments as dicts; it can be appended to `messages` as is.
  py::object chat(const py::object& messages, const py::object& tools, const std::string& tool_choice,
                  const py::kwargs& kw) {
    auto params = sampling_from(kw).params();
    Json tools_json;
    if (!tools.is_none()) {
      tools_json = to_json(tools);
      if (!tools_json.is_array()) ringlm::fail("tools: expected a list of {\"type\": \"function\", \"function\": {...}}");
      Json schemas = Json::array();
      for (std::size_t i = 0; i < tools_json.size(); ++i) {
        const Json& t = tools_json[i];
        if (!t.is_object() || !t.contains("function") || !t["function"].is_object() || !t["function"].contains("name") ||
            !t["function"]["name"].is_string())
          ringlm::fail("tools[", i, "]: expected {\"type\": \"function\", \"function\": {\"name\": ..., \"parameters\": {...}}}");
        const Json& fn = t["function"];
        schemas.push_back({{"name", fn["name"]},
                           {"parameters", fn.contains("parameters") && fn["parameters"].is_object() ? fn["parameters"] : Json::object()}});
      }
      if (tool_choice == "required") params.tool_schemas = schemas.dump();
      else if (tool_choice == "none") tools_json = Json();
      else if (tool_choice != "auto") ringlm::fail("tool_choice: '", tool_choice, "' is not auto, none or required");
    }
    const auto ids = chat_ids(to_json(messages), tools_json);
    ringlm::engine::GenerationResult r;
    {
      py::gil_scoped_release nogil;
      r = run(ids, params);
    }
    check_guided(r, params, context_length());
    if (tools.is_none()) return py::str(r.text);
    const ringlm::chat::GemmaReply reply = ringlm::chat::parse_gemma_reply(r.text);
    Json msg = {{"role", "assistant"}, {"content", reply.content}, {"tool_calls", Json::array()}};
    for (std::size_t i = 0; i < reply.tool_calls.size(); ++i)
      msg["tool_calls"].push_back({{"id", "call_" + std::to_string(i)},
                                   {"type", "function"},
                                   {"function", {{"name", reply.tool_calls[i].name}, {"arguments", reply.tool_calls[i].arguments}}}});
    return from_json(msg.dump());
  }

  py::object guided(const std::string& prompt, const py::object& schema, const std::string& system, py::kwargs kw) {
    kw["json_schema"] = schema;
    const std::string text = generate(prompt, system, kw);
    try {
      return from_json(text);
    } catch (const py::error_already_set&) {
      ringlm::fail("the reply is not complete JSON (ended by a stop string?): ", text.substr(0, 200));
    }
  }

  // Each row (a str, or a dict rendered through `template`) becomes one guided generation.
  // One result per row, in row order, never an exception for a row's failure: {"index",
  // "ok", "output" (the validated value, or None), "error" (None, or why: cut by a limit,
  // not valid, a template field missing), "finish", "text" (the raw reply)}.
  py::list extract(const py::iterable& rows, const py::object& schema, const std::string& instructions,
                   const std::string& tmpl, py::kwargs kw) {
    const Json schema_json = to_json(schema);
    ringlm::guided::Validator validator(schema_json);
    kw["json_schema"] = schema;
    const auto params = sampling_from(kw).params();
    engine_.grammar_for(params);  // a schema the grammar refuses is the call's error, not every row's
    const Json system = {{"role", "system"}, {"content", instructions + "\n" + schema_json.dump()}};
    py::list out;
    std::size_t index = 0;
    for (const auto& row : rows) {
      py::dict d;
      d["index"] = index++;
      d["ok"] = false;
      d["output"] = py::none();
      d["error"] = py::none();
      d["finish"] = py::none();
      d["text"] = py::none();
      out.append(d);
      std::vector<std::int32_t> prompt;
      ringlm::engine::GenerationResult r;
      try {
        const std::string user = py::isinstance<py::str>(row) ? row.cast<std::string>()
                                                              : ringlm::engine::fill_prompt_template(tmpl, to_json(row));
        prompt = chat_ids(Json::array({system, {{"role", "user"}, {"content", user}}}));
        py::gil_scoped_release nogil;
        r = run(prompt, params);
      } catch (const ringlm::Error& e) {
        d["error"] = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(e.what(), std::strlen(e.what()), "replace"));
        continue;
      }
      d["finish"] = ringlm::engine::finish_reason_name(r.finish);
      d["text"] = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(r.text.data(), r.text.size(), "replace"));
      Json value = Json::parse(r.text, nullptr, false);
      std::string why;
      if (value.is_discarded()) {
        why = r.finish == ringlm::engine::FinishReason::Length
                  ? std::string("the reply was cut by ") +
                        (std::string(ringlm::engine::length_limit(r, params.max_tokens)) == "max_tokens"
                             ? "max_tokens=" + std::to_string(params.max_tokens) + " (raise max_tokens)"
                             : "the context (" + std::to_string(context_length()) + " tokens)") +
                        " before its JSON value was complete"
                  : "the reply is not complete JSON";
      } else if (!validator.validate(value, &why)) {
        why = "the reply does not validate against the schema: " + why;
      }
      if (!why.empty()) {
        d["error"] = why;
        continue;
      }
      d["ok"] = true;
      d["output"] = from_json(r.text);
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
      {
        std::lock_guard lock(mu_);
        // Text held back until the end (an unfinished stop-string candidate) comes last.
        if (r.text.size() > streamed_) pieces_.push_back(r.text.substr(streamed_));
        result_ = r;
      }
      check_guided(r, params, owner_.context_length());  // a cut guided reply: the iteration raises at its end
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
  m.attr("__version__") = RINGLM_VERSION;
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
repeat_penalty, seed, max_tokens (256), stop (str or list), json_schema (dict or JSON text),
draft ("none", "ngram", "auto" or "assistant[:PATH]": speculative decoding as the CLI's
--draft; the output is the same either way) and draft_max (1..16, 4).
A json_schema reply cut by max_tokens or the context raises ringlm.Error naming the limit
(stream(): at the end of the iteration); extract() reports it in the row's result instead.)")
      .def(py::init<const std::string&, int, int, const std::string&, const std::string&>(), py::arg("model"),
           py::arg("threads") = 0, py::arg("ctx") = 0, py::arg("weights") = "q4_0", py::arg("activations") = "int8x2")
      .def("generate", &PyEngine::generate, py::arg("prompt"), py::arg("system") = "",
           "Reply to one user message (through the chat template); returns the text")
      .def("stream", &PyEngine::stream, py::arg("prompt"), py::arg("system") = "",
           "Like generate(), as an iterator of text pieces")
      .def("chat", &PyEngine::chat, py::arg("messages"), py::kw_only(), py::arg("tools") = py::none(),
           py::arg("tool_choice") = "auto",
           "Reply to a conversation: a list of {'role': ..., 'content': ...} dicts; returns the text. With tools "
           "(OpenAI's list of {'type': 'function', 'function': {name, description, parameters}}): returns the "
           "assistant message dict {'role', 'content', 'tool_calls': [{'id', 'type', 'function': {'name', "
           "'arguments' (a dict)}}]}; tool_choice 'required' constrains the reply to one call, 'none' hides the tools")
      .def("guided", &PyEngine::guided, py::arg("prompt"), py::arg("schema"), py::arg("system") = "",
           "Reply constrained to a JSON Schema (dict or text); returns the parsed value")
      .def("extract", &PyEngine::extract, py::arg("rows"), py::arg("schema"),
           py::arg("instructions") = "Extract the requested fields from the user's message. Reply with one JSON object "
                                     "that follows this JSON Schema:",
           py::arg("template") = "{text}",
           "One guided generation per row (str, or dict filled into `template`); returns one result per row, in "
           "order: {'index', 'ok', 'output' (the validated value or None), 'error' (None or why), 'finish', 'text'}; "
           "a failing row never raises")
      .def("tokenize", &PyEngine::tokenize, py::arg("text"))
      .def("detokenize", &PyEngine::detokenize, py::arg("ids"))
      .def("reset", &PyEngine::reset, "Forget the KV cache")
      .def_property_readonly("context_length", &PyEngine::context_length);
}
