#include "engine/engine.h"

#include <chrono>

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
  kernels::set_q4_activations(options.activations);
  model_ = model::load_model_any(options.model_dir, mo);
  for (auto id : tokenizer_.eos_ids()) stop_ids_.add(id);
  if (io::is_gguf_file(options.model_dir)) {
    // A GGUF file carries its chat template in the tokenizer metadata.
    io::GgufFile file(options.model_dir);
    const auto data = io::gguf_tokenizer_data(file);
    if (!data.chat_template.empty()) {
      nlohmann::ordered_json specials = nlohmann::ordered_json::object();
      if (tokenizer_.bos_id() >= 0) specials["bos_token"] = std::string(tokenizer_.piece(tokenizer_.bos_id()));
      if (data.eos_id) specials["eos_token"] = std::string(tokenizer_.piece(*data.eos_id));
      chat_template_ = std::make_unique<chat::ChatTemplate>(data.chat_template, options.model_dir.filename().string(),
                                                            specials);
    }
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
      fail("JSON Schema: not valid JSON: ", e.what());
    }
    guided::CompileOptions co;
    co.whitespace = options_.json_whitespace;
    co.mode = m;
    auto compiled = guided::compile_schema(schema, co);
    return std::make_shared<guided::GrammarIndex>(std::move(compiled.grammar), grammar_vocabulary(),
                                                  options_.grammar_index);
  });
  if (index->initial() == guided::GrammarIndex::kDead) fail("JSON Schema: no JSON value satisfies it");
  return index;
}

std::shared_ptr<guided::GrammarIndex> Engine::grammar_for_any_object() {
  return grammar_for_schema(R"({"type":"object"})");
}

}  // namespace ringlm::engine
