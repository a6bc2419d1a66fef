// `ringlm tokenize` and `ringlm detokenize`: the tokenizer from the command line.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/common_options.h"
#include "cli/hf_model.h"
#include "cli/model_locator.h"
#include "tokenizer/gguf_tokenizer_loader.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace {

std::string model_dir_or_default(const std::string& model, const std::string& hf) {
  if (!hf.empty()) return ringlm::cli::resolve_hf_model(hf).model.string();  // -hf ORG/NAME[:QUANT]
  if (!model.empty()) return ringlm::cli::resolve_model(model).string();  // a path or an HF repo id
  std::string dflt = ringlm::cli::default_model_dir();
  if (dflt.empty()) ringlm::fail("--model is required (no demo model is installed)");
  return dflt;
}

// A file's bytes; "-" is standard input (as llama.cpp's tools read it).
std::string read_whole_file(const std::string& path) { return ringlm::cli::read_text_file(path); }

// "1,2,3", "1 2 3" or "[1, 2, 3]".
std::vector<int32_t> parse_id_list(const std::string& text) {
  std::vector<int32_t> ids;
  std::string cleaned = text;
  for (char& c : cleaned)
    if (c == ',' || c == '[' || c == ']' || c == '\n' || c == '\t') c = ' ';
  std::istringstream in(cleaned);
  std::string item;
  while (in >> item) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 0 || v > INT32_MAX) ringlm::fail("--ids: '", item, "' is not a token id");
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

// Runs `line_fn` on every non-empty line of a JSON Lines file, naming the line on error.
template <typename F>
void for_each_jsonl(const std::string& path, F&& line_fn) {
  std::istringstream in(read_whole_file(path));
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      ringlm::fail(path, ":", number, ": invalid JSON (", e.what(), ")");
    }
    try {
      line_fn(j);
    } catch (const nlohmann::json::exception& e) {
      ringlm::fail(path, ":", number, ": ", e.what());
    }
  }
}

std::string ids_to_json(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  out += "]";
  return out;
}

void write_stdout(const std::string& s) {
  if (!s.empty() && std::fwrite(s.data(), 1, s.size(), stdout) != s.size()) ringlm::fail("cannot write to stdout");
  std::fflush(stdout);
}

}  // namespace

RINGLM_COMMAND(tokenize) {
  struct Options {
    std::string model, hf, text, file, jsonl;
    bool add_bos = false, no_parse_special = false;
  };
  auto opts = std::make_shared<Options>();
  auto* sub = app.add_subcommand("tokenize", "Encode text into token ids (printed as a JSON array)");
  sub->footer("Example:\n  ringlm tokenize --model DIR --text \"Hello world\"");
  ringlm::cli::add_hf_option(
      sub, opts->hf, sub->add_option("--model,-m", opts->model, "Model directory or bare tokenizer directory (tokenizer.json)"));
  auto* text = sub->add_option("--text", opts->text, "Text to encode");
  auto* file = sub->add_option("--file,-f,--input", opts->file, "File whose bytes are encoded (- = standard input)");
  auto* jsonl = sub->add_option("--jsonl", opts->jsonl,
                                 "Batch mode: a JSON Lines file of {\"text\": ...} (- = standard input); prints one id array per line");
  text->excludes(file);
  jsonl->excludes(text);
  jsonl->excludes(file);
  sub->add_flag("--add-bos", opts->add_bos, "Put the <bos> token first");
  sub->add_flag("--no-parse-special", opts->no_parse_special,
                "Treat special tokens written in the text (e.g. <|turn>) as plain text");
  sub->callback([opts, text, file, jsonl] {
    if (text->count() == 0 && file->count() == 0 && jsonl->count() == 0) {
      ringlm::fail("tokenize: give --text, --file or --jsonl");
    }
    const auto tokenizer = ringlm::load_tokenizer_any(model_dir_or_default(opts->model, opts->hf));
    ringlm::EncodeOptions eo;
    eo.add_bos = opts->add_bos;
    eo.parse_special = !opts->no_parse_special;
    if (jsonl->count()) {
      std::string out;
      for_each_jsonl(opts->jsonl, [&](const nlohmann::json& j) {
        out += ids_to_json(tokenizer.encode(j.at("text").get<std::string>(), eo));
        out += '\n';
      });
      write_stdout(out);
      return;
    }
    const std::string input = file->count() ? read_whole_file(opts->file) : opts->text;
    write_stdout(ids_to_json(tokenizer.encode(input, eo)) + "\n");
  });
}

RINGLM_COMMAND(detokenize) {
  struct Options {
    std::string model, hf, ids, jsonl;
    bool skip_special = false;
  };
  auto opts = std::make_shared<Options>();
  auto* sub = app.add_subcommand("detokenize", "Decode token ids into text (printed as is, no newline added)");
  sub->footer("Example:\n  ringlm detokenize --model DIR --ids 9259,1902");
  ringlm::cli::add_hf_option(
      sub, opts->hf, sub->add_option("--model,-m", opts->model, "Model directory or bare tokenizer directory (tokenizer.json)"));
  auto* ids_opt = sub->add_option("--ids", opts->ids, "Token ids: 1,2,3 or [1,2,3]");
  auto* jsonl = sub->add_option("--jsonl", opts->jsonl,
                                 "Batch mode: a JSON Lines file of {\"ids\": [...]}; prints one JSON string per line");
  ids_opt->excludes(jsonl);
  sub->add_flag("--skip-special", opts->skip_special, "Leave special tokens out of the text");
  sub->callback([opts, ids_opt, jsonl] {
    if (ids_opt->count() == 0 && jsonl->count() == 0) ringlm::fail("detokenize: give --ids or --jsonl");
    const auto tokenizer = ringlm::load_tokenizer_any(model_dir_or_default(opts->model, opts->hf));
    if (jsonl->count()) {
      std::string out;
      for_each_jsonl(opts->jsonl, [&](const nlohmann::json& j) {
        const std::string text = tokenizer.decode(j.at("ids").get<std::vector<int32_t>>(), opts->skip_special);
        // Decoded text may hold invalid UTF-8 bytes only as U+FFFD, so dump() cannot fail.
        out += nlohmann::json(text).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
        out += '\n';
      });
      write_stdout(out);
      return;
    }
    const auto ids = parse_id_list(opts->ids);
    write_stdout(tokenizer.decode(ids, opts->skip_special));
  });
}
