// ChatTemplate: loading from a model directory (file precedence, tokenizer_config forms,
// special tokens) and the golden conversations, text and token ids.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "chat/chat_template.h"
#include "util/error.h"

using ringlm::chat::ChatRequest;
using ringlm::chat::ChatTemplate;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

fs::path scratch_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ringlm_chat_template_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST(ChatTemplate, GoldenConversationsTextAndIds) {
  const std::string dir = std::string(RINGLM_TOKENIZER_DIR);
  auto tmpl = ChatTemplate::load(dir);
  auto tokenizer = ringlm::Tokenizer::load(dir);
  std::ifstream in(std::string(RINGLM_TEST_DATA_DIR) + "/tokenizer/chat-golden.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    auto c = ojson::parse(line);
    ChatRequest req;
    req.messages = c["input"]["messages"];
    if (c["input"].contains("tools")) req.tools = c["input"]["tools"];
    req.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    req.enable_thinking = c["enable_thinking"].get<bool>();
    std::string text = tmpl.render(req);
    EXPECT_EQ(text, c["text"].get<std::string>());
    EXPECT_EQ(ringlm::chat::encode_prompt(tokenizer, text), c["ids"].get<std::vector<std::int32_t>>());
    ++n;
  }
  EXPECT_GE(n, 4);
}

TEST(ChatTemplate, LoadsFromTokenizerConfigForms) {
  auto dir = scratch_dir("forms");
  write(dir / "tokenizer_config.json",
        R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
            "chat_template": [{"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"},
                              {"name": "tool_use", "template": "T{{ tools | length }}"}]})");
  ChatRequest req;
  req.messages = ojson::parse(R"([{"role": "user", "content": "hi"}])");
  req.tools = ojson::parse(R"([{"type": "function"}])");
  EXPECT_EQ(ChatTemplate::load(dir).render(req), "<s>hi</s>");
  EXPECT_EQ(ChatTemplate::load(dir, "tool_use").render(req), "T1");
  EXPECT_THROW(ChatTemplate::load(dir, "nope"), ringlm::Error);

  write(dir / "tokenizer_config.json", R"({"bos_token": "<s>", "chat_template": "S:{{ messages | length }}"})");
  EXPECT_EQ(ChatTemplate::load(dir).render(req), "S:1");
  write(dir / "chat_template.jinja", "J:{{ bos_token }}\n");  // the .jinja file wins
  EXPECT_EQ(ChatTemplate::load(dir).render(req), "J:<s>");
  fs::remove_all(dir);
}

TEST(ChatTemplate, VariablesSeenByTheTemplate) {
  ChatTemplate tmpl("{{ tools is none }} {{ enable_thinking is defined }} {{ add_generation_prompt }} {{ extra_flag }}",
                    "vars");
  ChatRequest req;
  req.extra["extra_flag"] = 7;
  EXPECT_EQ(tmpl.render(req), "True False False 7");
  req.enable_thinking = false;
  req.add_generation_prompt = true;
  req.tools = ojson::array();
  EXPECT_EQ(tmpl.render(req), "False True True 7");
}

TEST(ChatTemplate, MissingTemplateAndBadRequestsAreErrors) {
  auto dir = scratch_dir("missing");
  write(dir / "tokenizer_config.json", R"({"bos_token": "<s>"})");
  try {
    ChatTemplate::load(dir);
    FAIL();
  } catch (const ringlm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no chat template"), std::string::npos);
  }
  write(dir / "tokenizer_config.json", R"({"chat_template": 5})");
  EXPECT_THROW(ChatTemplate::load(dir), ringlm::Error);
  EXPECT_THROW(ringlm::chat::parse_chat_request("[]", "req.json"), ringlm::Error);
  EXPECT_THROW(ringlm::chat::parse_chat_request(R"({"messages": {}})", "req.json"), ringlm::Error);
  EXPECT_THROW(ringlm::chat::parse_chat_request(R"({"messages": [], "tools": 3})", "req.json"), ringlm::Error);
  ChatTemplate tmpl("x", "x");
  ChatRequest req;
  req.messages = ojson::parse(R"([{"content": "no role"}])");
  EXPECT_THROW(tmpl.render(req), ringlm::Error);
  fs::remove_all(dir);
}
