#include "engine/engine.h"

#include "guided/reply_grammar.h"

#include <chrono>

#include "chat/gguf_template.h"
#include "chat/user_text.h"
#include "guided/reply_grammar.h"
#include "io/gguf_reader.h"
#include "io/gguf_tokenizer.h"
#include "model/gguf_model.h"
#include "tokenizer/gguf_tokenizer_loader.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace ringlm::engine {

namespace fs = std::filesystem;

namespace {
bool has_chat_template(const fs::path& dir) {
  if (fs::exists(dir / "chat_template.jinja") || fs::exists(dir / "chat_template.json")) return true;
  // tokenizer_config.json may carry it; the loader decides (it reports a malformed one).
  return fs::exists(dir / "tokenizer_config.json");
}
}  // namespace

namespace {
const fs::path& checked_dir(const fs::path& dir) {
  if (!fs::is_directory(dir) && !io::is_gguf_file(dir))
    fail(dir.string(), ": not a model directory (config.json + safetensors) or a GGUF file");
  return dir;
}
}  // namespace

Engine::Engine(const EngineOptions& options)
    : options_(options),
      load_start_(std::chrono::steady_clock::now()),
      tokenizer_(load_tokenizer_any(checked_dir(options.model_dir))),
      grammars_(options.grammar_cache) {
  const auto t0 = load_start_;
  model::ModelOptions mo;
  mo.threads = options.threads;
  mo.weights = options.weights;
  mo.activations = options.activations;
  mo.reference_attention = options.reference_attention;
  mo.packed_weights_in_memory = options.packed_weights_in_memory;
  mo.device = options.device;
  model_ = model::load_model_any(options.model_dir, mo);
  for (auto id : tokenizer_.eos_ids()) stop_ids_.add(id);
  if (io::is_gguf_file(options.model_dir)) {
    // A GGUF file carries its chat template in the tokenizer metadata.
    chat_template_ = chat::gguf_chat_template(options.model_dir, tokenizer_);
  } else {
    for (auto id : chat::StopIds::load(options.model_dir).ids) stop_ids_.add(id);
  }
  if (!chat_template_ && fs::is_directory(options.model_dir) && has_chat_template(options.model_dir)) {
    try {
      chat_template_ = std::make_unique<chat::ChatTemplate>(chat::ChatTemplate::load(options.model_dir));
    } catch (const Error&) {
      // A tokenizer_config.json without a template is normal; a broken template file is not.
      if (fs::exists(options.model_dir / "chat_template.jinja")) throw;
    }
  }
  load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string Engine::render_chat(const chat::ChatRequest& request) const {
  if (!chat_template_) fail(options_.model_dir.string(), ": the model directory has no chat template");
  return chat_template_->render(request);
}

std::vector<std::int32_t> Engine::encode_chat(const chat::ChatRequest& request, bool trust_control_tokens) const {
  if (!chat_template_) fail(options_.model_dir.string(), ": the model directory has no chat template");
  return chat::encode_chat(*chat_template_, tokenizer_, request, trust_control_tokens);
}

std::vector<std::int32_t> Engine::encode_text(std::string_view text) const {
  EncodeOptions eo;
  eo.add_bos = tokenizer_.add_bos_default() && tokenizer_.bos_id() >= 0;
  return tokenizer_.encode(text, eo);
}

std::shared_ptr<const guided::Vocabulary> Engine::grammar_vocabulary() {
  std::lock_guard<std::mutex> lock(grammar_mu_);
  if (!vocabulary_) {
    // The grammar allows exactly the engine's stop ids at the end of the value, so the
    // vocabulary takes them rather than the tokenizer's eos list alone.
    std::vector<std::uint32_t> stops(stop_ids_.ids.begin(), stop_ids_.ids.end());
    vocabulary_ = guided::vocabulary_from_tokenizer(tokenizer_, std::move(stops));
  }
  return vocabulary_;
}

std::shared_ptr<guided::GrammarIndex> Engine::grammar_for_schema(const std::string& schema_text, const std::string& mode) {
  GenerationParams p;
  p.json_schema = schema_text;
  p.schema_mode = mode;
  return grammar_for(p);
}

namespace {

guided::Json parse_schema_text(const std::string& text, const char* param) {
  // Linear in the text (util/json_parse.h): a schema of 100k properties must not cost
  // minutes before the compiler's own budgets apply.
  try {
    return parse_json(text);
  } catch (const Error& e) {
    throw Error(std::string("JSON Schema: not valid JSON: ") + e.what(), e.kind(), param);
  }
}

}  // namespace

std::shared_ptr<guided::GrammarIndex> Engine::grammar_for(const GenerationParams& params) {
  const bool tools = !params.tool_schemas.empty();
  if (!tools && params.json_schema.empty() && !params.json_object) return nullptr;
  const guided::SchemaMode m =
      params.schema_mode.empty() ? options_.schema_mode : guided::parse_schema_mode(params.schema_mode);
  const std::string& text = tools ? params.tool_schemas : params.json_schema.empty() ? std::string(R"({"type":"object"})") : params.json_schema;
  const char* param = tools ? "tools" : "response_format";
  // One cache entry per (kind, mode, thinking, text): a lenient grammar must not answer a
  // strict request, nor a bare value one that may think first.
  const std::string key = std::string(tools ? "tools " : "value ") + (m == guided::SchemaMode::kLenient ? "lenient " : "strict ") +
                          (params.guided_thinking ? "thinking" : "") +
                          (tools && params.single_tool_call ? " single\n" : "\n") + text;
  auto index = grammars_.get(key, [&] {
    guided::CompileOptions co;
    co.whitespace = options_.json_whitespace;
    co.mode = m;
    guided::Json doc = parse_schema_text(text, param);
    try {
      guided::Grammar g;
      if (tools) {
        std::vector<guided::ToolGrammar> list;
        if (!doc.is_array() || doc.empty()) fail("tools: expected a non-empty array of {name, parameters}");
        for (auto& t : doc) {
          if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
            fail("tools: every tool needs a string 'name'");
          guided::Json schema = t.contains("parameters") ? t["parameters"] : guided::Json::object();
          if (schema.is_object() && !schema.contains("type")) schema["type"] = "object";  // arguments are an object
          auto compiled = guided::compile_schema(schema, co);
          list.push_back({t["name"].get<std::string>(), std::move(compiled.grammar)});
        }
        g = guided::tool_call_grammar(std::move(list), params.guided_thinking, !params.single_tool_call);
      } else {
        g = guided::with_thought_channel(guided::compile_schema(doc, co).grammar, params.guided_thinking);
      }
      return std::make_shared<guided::GrammarIndex>(std::move(g), grammar_vocabulary(), options_.grammar_index);
    } catch (const Error& e) {
      rethrow_with_param(e, param);  // the schema came from the request's response_format / tools
    }
  });
  if (index->initial() == guided::GrammarIndex::kDead)
    throw Error(tools ? "tools: no arguments satisfy the parameter schemas" : "JSON Schema: no JSON value satisfies it",
                ErrorKind::invalid_argument, param);
  return index;
}

std::shared_ptr<guided::GrammarIndex> Engine::grammar_for_any_object() {
  return grammar_for_schema(R"({"type":"object"})");
}

}  // namespace ringlm::engine
