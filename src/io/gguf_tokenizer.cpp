#include "io/gguf_tokenizer.h"

#include "io/gguf_reader.h"
#include "io/gguf_writer.h"
#include "util/error.h"

namespace ringlm::io {

GgufTokenizerData gguf_tokenizer_data(const GgufFile& f) {
  GgufTokenizerData d;
  const std::string k = "tokenizer.ggml.";
  auto where = [&](const std::string& key) { return f.path() + ": metadata key '" + key + "'"; };
  d.model = std::string(f.get_string(k + "model"));
  if (f.find(k + "pre")) d.pre = std::string(f.get_string(k + "pre"));
  for (auto s : f.get_array(k + "tokens").strings(where(k + "tokens"))) d.tokens.emplace_back(s);
  const std::size_t n = d.tokens.size();
  if (n == 0) fail_model_file(where(k + "tokens"), " is empty");
  if (f.find(k + "scores")) {
    d.scores = f.get_array(k + "scores").floats(where(k + "scores"));
    if (d.scores.size() != n) fail_model_file(where(k + "scores"), " has ", d.scores.size(), " entries for ", n, " tokens");
  }
  if (f.find(k + "token_type")) {
    for (auto t : f.get_array(k + "token_type").ints(where(k + "token_type"))) {
      if (t < 0 || t > 6) fail_model_file(where(k + "token_type"), " has unknown token type ", t);
      d.token_types.push_back(static_cast<std::int32_t>(t));
    }
    if (d.token_types.size() != n)
      fail_model_file(where(k + "token_type"), " has ", d.token_types.size(), " entries for ", n, " tokens");
  }
  if (f.find(k + "merges"))
    for (auto s : f.get_array(k + "merges").strings(where(k + "merges"))) d.merges.emplace_back(s);
  auto id = [&](const char* name) -> std::optional<std::int32_t> {
    const std::string key = k + name;
    if (!f.find(key)) return std::nullopt;
    const std::int64_t v = f.get_int(key);
    if (v < 0 || v >= static_cast<std::int64_t>(n)) fail_model_file(where(key), " is ", v, ", not a token id (", n, " tokens)");
    return static_cast<std::int32_t>(v);
  };
  d.bos_id = id("bos_token_id");
  d.eos_id = id("eos_token_id");
  d.unk_id = id("unknown_token_id");
  d.pad_id = id("padding_token_id");
  d.add_bos = f.get_bool_or(k + "add_bos_token", false);
  d.add_eos = f.get_bool_or(k + "add_eos_token", false);
  d.add_space_prefix = f.get_bool_or(k + "add_space_prefix", false);
  if (f.find("tokenizer.chat_template")) d.chat_template = std::string(f.get_string("tokenizer.chat_template"));
  return d;
}

void gguf_write_tokenizer(GgufWriter& w, const GgufTokenizerData& d) {
  const std::string k = "tokenizer.ggml.";
  w.add_string(k + "model", d.model);
  if (!d.pre.empty()) w.add_string(k + "pre", d.pre);
  w.add_array_string(k + "tokens", d.tokens);
  if (!d.scores.empty()) w.add_array_f32(k + "scores", d.scores);
  if (!d.token_types.empty()) w.add_array_i32(k + "token_type", d.token_types);
  if (!d.merges.empty()) w.add_array_string(k + "merges", d.merges);
  if (d.bos_id) w.add_u32(k + "bos_token_id", static_cast<std::uint32_t>(*d.bos_id));
  if (d.eos_id) w.add_u32(k + "eos_token_id", static_cast<std::uint32_t>(*d.eos_id));
  if (d.unk_id) w.add_u32(k + "unknown_token_id", static_cast<std::uint32_t>(*d.unk_id));
  if (d.pad_id) w.add_u32(k + "padding_token_id", static_cast<std::uint32_t>(*d.pad_id));
  w.add_bool(k + "add_bos_token", d.add_bos);
  w.add_bool(k + "add_eos_token", d.add_eos);
  w.add_bool(k + "add_space_prefix", d.add_space_prefix);
  if (!d.chat_template.empty()) w.add_string("tokenizer.chat_template", d.chat_template);
}

}  // namespace ringlm::io
