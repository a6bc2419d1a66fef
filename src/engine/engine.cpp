#include "engine/engine.h"

#include <chrono>

#include "chat/gguf_template.h"
#include "chat/user_text.h"
#include "io/gguf_reader.h"
#include "io/gguf_tokenizer.h"
#include "model/gguf_model.h"
#include "tokenizer/gguf_tokenizer_loader.h"
#include "util/error.h"

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
    // vocabulary is built here rather than from the tokenizer's eos list alone.
    std::vector<std::string> bytes(static_cast<std::size_t>(tokenizer_.vocab_size()));
    for (std::int32_t id = 0; id < tokenizer_.vocab_size(); ++id) bytes[id] = tokenizer_.token_bytes(id);
    std::vector<std::uint32_t> stops(stop_ids_.ids.begin(), stop_ids_.ids.end());
    vocabulary_ = std::make_shared<const guided::Vocabulary>(std::move(bytes), std::move(stops));
  }
  return vocabulary_;
}

std::shared_ptr<guided::GrammarIndex> Engine::grammar_for_schema(const std::string& schema_text, const std::string& mode) {
  const guided::SchemaMode m = mode.empty() ? options_.schema_mode : guided::parse_schema_mode(mode);
  // One cache entry per (mode, schema): a lenient grammar must not answer a strict request.
  const std::string key = (m == guided::SchemaMode::kLenient ? "lenient\n" : "strict\n") + schema_text;
  auto index = grammars_.get(key, [&] {
    guided::Json schema;
    try {
      schema = guided::Json::parse(schema_text);
    } catch (const std::exception& e) {
      throw Error(std::string("JSON Schema: not valid JSON: ") + e.what(), ErrorKind::invalid_argument,
                  "response_format");
    }
    guided::CompileOptions co;
    co.whitespace = options_.json_whitespace;
    co.mode = m;
    try {
      auto compiled = guided::compile_schema(schema, co);
      return std::make_shared<guided::GrammarIndex>(std::move(compiled.grammar), grammar_vocabulary(),
                                                    options_.grammar_index);
    } catch (const Error& e) {
      rethrow_with_param(e, "response_format");  // the schema came from the request's response_format
    }
  });
  if (index->initial() == guided::GrammarIndex::kDead)
    throw Error("JSON Schema: no JSON value satisfies it", ErrorKind::invalid_argument, "response_format");
  return index;
}

std::shared_ptr<guided::GrammarIndex> Engine::grammar_for_any_object() {
  return grammar_for_schema(R"({"type":"object"})");
}

}  // namespace ringlm::engine
