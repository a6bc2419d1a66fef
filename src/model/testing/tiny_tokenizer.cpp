// A small Gemma-shaped BPE tokenizer for the tiny test checkpoints. Merges are learned at
// write time from a fixed built-in text, so the file is deterministic and self-consistent.
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "model/testing/test_checkpoint.h"
#include "util/error.h"

namespace ringlm::model::testing {
namespace {

using ojson = nlohmann::ordered_json;

const char* const kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's visible space

const char kCorpus[] =
    "The quick brown fox jumps over the lazy dog. A model reads the prompt and writes an answer.\n"
    "The user asks a question and the model gives a short answer in plain text.\n"
    "You are a helpful assistant. Answer the question of the user with care and keep the answer short.\n"
    "Here is the weather for today: it is sunny with a light wind and the temperature is twenty degrees.\n"
    "{\"name\": \"Alice\", \"age\": 42, \"city\": \"Paris\", \"tags\": [\"one\", \"two\"], \"active\": true, \"note\": null}\n"
    "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"count\": {\"type\": \"integer\"}}, "
    "\"required\": [\"name\"], \"additionalProperties\": false}\n"
    "def add(a, b):\n    return a + b\n\nfor item in items:\n    print(item)\n"
    "int main(void) { return 0; }\n"
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12 20 42 100 256 1000 2024 3.14 -1 false true\n"
    "The ring cache keeps the last tokens of the window, and the full layers keep every token of the context.\n"
    "Tokens are pieces of words; the tokenizer splits text into pieces and the model predicts the next piece.\n"
    "When the answer is ready the model ends its turn, and the user may ask another question.\n"
    "This is a test of the tiny tokenizer with simple words like cat, dog, house, tree, water, light, time, "
    "people, world, number, system, string, value, function, return, object, array, list, key, data.\n"
    "Please write a list of three colors: red, green and blue. Then write the names of two cities.\n"
    "Hello world! How are you today? I am fine, thank you. What is your name? My name is Gemma.\n";

struct AddedToken {
  int id;
  std::string content;
  bool special;
};

std::vector<AddedToken> control_tokens() {
  std::map<int, std::pair<std::string, bool>> named = {
      {0, {"<pad>", true}}, {1, {"<eos>", true}}, {2, {"<bos>", true}}, {3, {"<unk>", true}},
      {4, {"<mask>", false}}, {5, {"[multimodal]", false}},
      {46, {"<|tool>", true}}, {47, {"<tool|>", true}}, {48, {"<|tool_call>", true}},
      {49, {"<tool_call|>", true}}, {50, {"<|tool_response>", true}}, {51, {"<tool_response|>", true}},
      {52, {"<|\"|>", true}}, {98, {"<|think|>", true}}, {100, {"<|channel>", true}},
      {101, {"<channel|>", true}}, {105, {"<|turn>", true}}, {106, {"<turn|>", true}},
  };
  std::vector<AddedToken> out;
  int unused = 0;
  for (int id = 0; id <= 106; ++id) {
    auto it = named.find(id);
    if (it != named.end()) out.push_back({id, it->second.first, it->second.second});
    else out.push_back({id, "<unused" + std::to_string(unused++) + ">", false});
  }
  return out;
}

// Splits normalised text into words: a word is an optional leading space mark plus
// non-space characters; newlines stand alone and never merge.
std::vector<std::vector<std::string>> words_of(const std::string& text) {
  std::vector<std::vector<std::string>> words;
  std::vector<std::string> cur;
  auto flush = [&] {
    if (!cur.empty()) words.push_back(cur);
    cur.clear();
  };
  for (char c : text) {
    if (c == '\n') {
      flush();
    } else if (c == ' ') {
      flush();
      cur.push_back(kSpace);
    } else {
      cur.push_back(std::string(1, c));
    }
  }
  flush();
  return words;
}

}  // namespace

void write_tiny_tokenizer(const std::filesystem::path& dir, int vocab_size, const std::string& chat_template) {
  std::vector<std::string> vocab;  // id -> token
  std::vector<AddedToken> added = control_tokens();
  for (const auto& a : added) vocab.push_back(a.content);
  vocab.push_back("\n");  // 107, as in Gemma
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    vocab.push_back(buf);
  }
  vocab.push_back(kSpace);
  for (int c = 0x21; c <= 0x7e; ++c) vocab.push_back(std::string(1, static_cast<char>(c)));
  std::set<std::string> known(vocab.begin(), vocab.end());
  if (static_cast<int>(vocab.size()) > vocab_size) fail("tiny tokenizer: vocab_size ", vocab_size, " is too small");

  // Byte-pair merges learned greedily from the corpus (ties broken by the pair's text).
  std::vector<std::pair<std::string, std::string>> merges;
  auto words = words_of(kCorpus);
  while (static_cast<int>(vocab.size()) < vocab_size) {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const auto& w : words)
      for (std::size_t i = 0; i + 1 < w.size(); ++i) ++counts[{w[i], w[i + 1]}];
    const std::pair<std::string, std::string>* best = nullptr;
    int best_count = 0;
    for (const auto& [pair, count] : counts)
      if (count > best_count && !known.count(pair.first + pair.second)) {
        best = &pair;
        best_count = count;
      }
    if (!best) fail("tiny tokenizer: the built-in corpus yields only ", vocab.size(), " tokens, need ", vocab_size);
    const auto merge = *best;
    const std::string joined = merge.first + merge.second;
    merges.push_back(merge);
    vocab.push_back(joined);
    known.insert(joined);
    for (auto& w : words) {
      std::vector<std::string> next;
      for (std::size_t i = 0; i < w.size(); ++i) {
        if (i + 1 < w.size() && w[i] == merge.first && w[i + 1] == merge.second) {
          next.push_back(joined);
          ++i;
        } else {
          next.push_back(w[i]);
        }
      }
      w = std::move(next);
    }
  }

  ojson tok;
  tok["version"] = "1.0";
  tok["truncation"] = nullptr;
  tok["padding"] = nullptr;
  ojson added_json = ojson::array();
  for (const auto& a : added)
    added_json.push_back({{"id", a.id}, {"content", a.content}, {"single_word", false}, {"lstrip", false},
                          {"rstrip", false}, {"normalized", false}, {"special", a.special}});
  added_json.push_back({{"id", 107}, {"content", "\n"}, {"single_word", false}, {"lstrip", false},
                        {"rstrip", false}, {"normalized", false}, {"special", false}});
  tok["added_tokens"] = added_json;
  tok["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}};
  tok["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"},
                          {"invert", false}};
  tok["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", ojson::array({{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                               {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
      {"pair", ojson::array({{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                             {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                             {{"SpecialToken", {{"id", "<bos>"}, {"type_id", 1}}}},
                             {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}})},
      {"special_tokens", {{"<bos>", {{"id", "<bos>"}, {"ids", {2}}, {"tokens", {"<bos>"}}}}}}};
  tok["decoder"] = {{"type", "Sequence"},
                    {"decoders", ojson::array({{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                                               {{"type", "ByteFallback"}},
                                               {{"type", "Fuse"}}})}};
  ojson vocab_json = ojson::object();
  for (std::size_t i = 0; i < vocab.size(); ++i) vocab_json[vocab[i]] = i;
  ojson merges_json = ojson::array();
  for (const auto& m : merges) merges_json.push_back({m.first, m.second});
  tok["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", "<unk>"},
                  {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr}, {"fuse_unk", true},
                  {"byte_fallback", true}, {"ignore_merges", false}, {"vocab", vocab_json}, {"merges", merges_json}};

  ojson cfg;
  cfg["add_bos_token"] = true;
  cfg["add_eos_token"] = false;
  ojson decoder = ojson::object();
  for (const auto& a : added)
    decoder[std::to_string(a.id)] = {{"content", a.content}, {"lstrip", false}, {"normalized", false},
                                     {"rstrip", false}, {"single_word", false}, {"special", a.special}};
  decoder["107"] = {{"content", "\n"}, {"lstrip", false}, {"normalized", false},
                    {"rstrip", false}, {"single_word", false}, {"special", false}};
  cfg["added_tokens_decoder"] = decoder;
  cfg["bos_token"] = "<bos>";
  cfg["clean_up_tokenization_spaces"] = false;
  cfg["eos_token"] = "<turn|>";
  cfg["model_max_length"] = 4096;
  cfg["pad_token"] = "<pad>";
  cfg["padding_side"] = "left";
  cfg["spaces_between_special_tokens"] = false;
  cfg["tokenizer_class"] = "GemmaTokenizer";
  cfg["unk_token"] = "<unk>";
  if (!chat_template.empty()) cfg["chat_template"] = chat_template;

  auto write = [&](const char* name, const ojson& j) {
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    if (!out) fail((dir / name).string(), ": cannot create");
    out << j.dump(1) << "\n";
    if (!out) fail((dir / name).string(), ": write failed");
  };
  write("tokenizer.json", tok);
  write("tokenizer_config.json", cfg);
}

}  // namespace ringlm::model::testing
