#include "server/fake_backend.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "audio/audio_decode.h"
#include "util/error.h"
#include "util/splitmix.h"
#include "vision/image_decode.h"

namespace ringlm::server {

using json = nlohmann::ordered_json;  // keys keep the order they were given in (schemas, tool arguments)

namespace {

constexpr const char* kToolsOpen = "<tools>";
constexpr const char* kToolsClose = "</tools>\n";
constexpr const char* kCallOpen = "<tool_call>";
constexpr const char* kCallClose = "</tool_call>";
constexpr const char* kThinkOpen = "<think>";
constexpr const char* kThinkClose = "</think>";
constexpr const char* kThinkPrompt = "<|think|>";  // what render_chat writes with thinking on
constexpr const char* kFakeThought = "The fake backend thinks it over.";

// <think>...</think> split off as reasoning, piece by piece: text that may be the start of a
// marker is held back until it is certain.
class FakeThoughtSplitter final : public ThoughtSplitter {
 public:
  void push(std::string_view piece, Delta& out) override {
    buffer_.append(piece);
    for (;;) {
      const std::string_view marker = in_thought_ ? kThinkClose : kThinkOpen;
      const std::size_t at = buffer_.find(marker);
      std::string& sink = in_thought_ ? out.reasoning : out.content;
      if (at == std::string::npos) {
        std::size_t hold = 0;  // the longest suffix that is a proper prefix of the marker
        for (std::size_t n = std::min(buffer_.size(), marker.size() - 1); n > 0 && hold == 0; --n)
          if (buffer_.compare(buffer_.size() - n, n, marker.substr(0, n)) == 0) hold = n;
        sink += buffer_.substr(0, buffer_.size() - hold);
        buffer_.erase(0, buffer_.size() - hold);
        return;
      }
      sink += buffer_.substr(0, at);
      buffer_.erase(0, at + marker.size());
      in_thought_ = !in_thought_;
    }
  }
  void finish(Delta& out) override {
    (in_thought_ ? out.reasoning : out.content) += buffer_;
    buffer_.clear();
  }

 private:
  std::string buffer_;
  bool in_thought_ = false;
};

// A small value that satisfies common schemas (type, required, enum, const, min*).
json instance_of(const json& schema, int depth) {
  if (!schema.is_object() || depth > 8) return nullptr;
  if (schema.contains("const")) return schema["const"];
  if (schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty()) return schema["enum"][0];
  for (const char* key : {"anyOf", "oneOf", "allOf"}) {
    if (schema.contains(key) && schema[key].is_array() && !schema[key].empty()) return instance_of(schema[key][0], depth + 1);
  }
  std::string type;
  if (schema.contains("type")) {
    const json& t = schema["type"];
    if (t.is_string()) type = t.get<std::string>();
    else if (t.is_array())
      for (const auto& x : t) if (x.is_string() && x != "null") { type = x.get<std::string>(); break; }
  }
  if (type.empty()) type = schema.contains("properties") ? "object" : schema.contains("items") ? "array" : "string";
  if (type == "object") {
    json obj = json::object();
    if (schema.contains("properties") && schema["properties"].is_object()) {
      for (const auto& [name, sub] : schema["properties"].items()) obj[name] = instance_of(sub, depth + 1);
    }
    return obj;
  }
  if (type == "array") {
    json arr = json::array();
    std::size_t n = schema.value("minItems", 1);
    if (schema.contains("maxItems") && schema["maxItems"].is_number_unsigned()) n = std::min<std::size_t>(n, schema["maxItems"]);
    n = std::min<std::size_t>(n, 4);
    for (std::size_t i = 0; i < n; ++i) arr.push_back(instance_of(schema.value("items", json::object()), depth + 1));
    return arr;
  }
  if (type == "integer") return schema.contains("minimum") && schema["minimum"].is_number() ? json(static_cast<long long>(schema["minimum"].get<double>())) : json(1);
  if (type == "number") return schema.contains("minimum") && schema["minimum"].is_number() ? schema["minimum"] : json(1.5);
  if (type == "boolean") return true;
  if (type == "null") return nullptr;
  std::string s = "fake";
  if (schema.value("format", "") == "date") s = "2024-01-01";
  std::size_t min_len = schema.value("minLength", 0);
  while (s.size() < std::min<std::size_t>(min_len, 64)) s += "x";
  return s;
}

// Length of the longest prefix of `s` that ends on a UTF-8 character boundary.
std::size_t complete_utf8_prefix(const std::string& s) {
  std::size_t n = s.size();
  std::size_t i = n;
  int back = 0;
  while (i > 0 && back < 4) {
    unsigned char c = static_cast<unsigned char>(s[i - 1]);
    if ((c & 0xC0) != 0x80) {  // lead byte or ASCII
      std::size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
      return (n - (i - 1) >= need) ? n : i - 1;
    }
    --i;
    ++back;
  }
  return n;
}

// Longest suffix of `text` that is a proper prefix of one of the stop strings.
std::size_t stop_prefix_overlap(const std::string& text, const std::vector<std::string>& stops) {
  std::size_t best = 0;
  for (const auto& s : stops) {
    for (std::size_t k = std::min(s.size() - 1, text.size()); k > best; --k) {
      if (text.compare(text.size() - k, k, s, 0, k) == 0) {
        best = k;
        break;
      }
    }
  }
  return best;
}

}  // namespace

FakeBackend::FakeBackend(FakeBackendOptions options)
    : options_(options),
      slot_busy_(static_cast<std::size_t>(std::max(options.slots, 1))),
      slot_history_(static_cast<std::size_t>(std::max(options.slots, 1))) {
  if (options_.slots < 1) fail("fake backend: slots must be at least 1");
}

std::vector<std::int32_t> FakeBackend::render_chat(const json& messages, const json& tools,
                                                   const std::string& tool_choice, bool add_generation_prompt,
                                                   bool enable_thinking) {
  std::string text = enable_thinking ? kThinkPrompt : "";
  if (tools.is_array() && !tools.empty() && tool_choice != "none") text += kToolsOpen + tools.dump() + kToolsClose;
  for (const auto& m : messages) {
    const std::string role = m.at("role").get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "tool" && role != "developer") {
      fail("chat template: unsupported role '", role, "'");
    }
    text += "<|" + role + "|>";
    if (m["content"].is_string()) text += m["content"].get<std::string>();
    text += "\n";
  }
  if (add_generation_prompt) text += "<|assistant|>";
  {
    std::lock_guard lock(mu_);
    seen_.tools = tools;
    seen_.tool_choice = tool_choice;
    seen_.messages = messages;
    seen_.enable_thinking = enable_thinking;
  }
  return tokenize(text);
}

// Media (with FakeBackendOptions::media): headers are probed for real, each part costs
// media_tokens soft tokens ('M' ids), and "encoding" holds the planned bytes for media_delay.
MediaPlan FakeBackend::plan_chat_media(const json& messages, const json& tools, const std::string& tool_choice,
                                       bool add_generation_prompt, bool enable_thinking,
                                       const std::vector<MediaInput>& media) {
  if (!options_.media) return Backend::plan_chat_media(messages, tools, tool_choice, add_generation_prompt, enable_thinking, media);
  MediaPlan plan{static_cast<int>(render_chat(messages, tools, tool_choice, add_generation_prompt, enable_thinking).size()), 0};
  for (const auto& m : media) {
    try {
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(m.bytes.data());
      if (m.kind == MediaKind::audio) {
        const audio::AudioInfo info = audio::probe_audio(bytes, m.bytes.size(), m.name);
        plan.work_bytes += static_cast<std::size_t>((info.seconds >= 0 ? info.seconds : 30.0) * info.rate * 4);
      } else {
        const vision::ImageInfo info = vision::probe_image(bytes, m.bytes.size(), m.name);
        plan.work_bytes += static_cast<std::size_t>(info.width) * static_cast<std::size_t>(info.height) * 3;
      }
    } catch (const Error& e) {
      throw Error(e.what(), e.kind(), m.param);
    }
    plan.prompt_tokens += options_.media_tokens;
  }
  return plan;
}

PromptWithMedia FakeBackend::render_chat_media(const json& messages, const json& tools, const std::string& tool_choice,
                                               bool add_generation_prompt, bool enable_thinking,
                                               const std::vector<MediaInput>& media) {
  if (!options_.media) return Backend::render_chat_media(messages, tools, tool_choice, add_generation_prompt, enable_thinking, media);
  const MediaPlan plan = plan_chat_media(messages, tools, tool_choice, add_generation_prompt, enable_thinking, media);
  media_encodes_.fetch_add(1);
  std::vector<std::uint8_t> held(plan.work_bytes, 1);  // what decoding would hold
  std::this_thread::sleep_for(options_.media_delay);
  PromptWithMedia out{render_chat(messages, tools, tool_choice, add_generation_prompt, enable_thinking), nullptr, 0};
  out.media_tokens = options_.media_tokens * static_cast<int>(media.size());
  out.ids.insert(out.ids.end(), static_cast<std::size_t>(out.media_tokens), 'M');
  return out;
}

std::vector<std::int32_t> FakeBackend::tokenize(std::string_view text) {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size());
  for (unsigned char c : text) ids.push_back(c);
  return ids;
}

std::string FakeBackend::token_text(std::int32_t id) {
  if (id < 0 || id > 255) return "";
  return std::string(1, static_cast<char>(id));
}

std::string FakeBackend::reply_for(const std::vector<std::int32_t>& prompt, const engine::GenerationParams& params) const {
  std::string prompt_text;
  for (auto id : prompt) prompt_text.push_back(static_cast<char>(id));
  // Thinking on: a thought, then the reply the request would get without it.
  if (prompt_text.rfind(kThinkPrompt, 0) == 0) {
    const std::vector<std::int32_t> rest(prompt.begin() + static_cast<std::ptrdiff_t>(std::string_view(kThinkPrompt).size()), prompt.end());
    return std::string(kThinkOpen) + kFakeThought + kThinkClose + reply_for(rest, params);
  }
  if (!params.json_schema.empty()) {
    json schema = json::parse(params.json_schema, nullptr, false);
    if (schema.is_discarded()) throw Error("json_schema: not valid JSON", ErrorKind::invalid_argument, "response_format");
    if (schema.is_object() && schema.contains("x-fake-reject"))
      throw Error("json_schema: the fake backend rejects this schema", ErrorKind::invalid_argument, "response_format");
    return instance_of(schema, 0).dump();
  }
  if (params.json_object) return R"({"answer":"fake"})";
  if (auto open = prompt_text.find(kToolsOpen); open != std::string::npos) {
    auto close = prompt_text.find(kToolsClose, open);
    json tools = json::parse(prompt_text.substr(open + 7, close - open - 7), nullptr, false);
    if (!tools.is_discarded() && tools.is_array() && !tools.empty()) {
      const json& fn = tools[0]["function"];
      json call = {{"name", fn["name"]}, {"arguments", instance_of(fn.value("parameters", json::object()), 0)}};
      if (!call["arguments"].is_object()) call["arguments"] = json::object();
      std::string calls = kCallOpen + call.dump() + kCallClose;
      // "__two_calls__" in the prompt: two calls, as a model making parallel calls would
      // (one only where the tool grammar allows one).
      if (prompt_text.find("__two_calls__") != std::string::npos && !params.single_tool_call) calls += calls;
      return calls;
    }
  }
  static const char* kWords[] = {"the", "ring", "cache", "holds", "café", "tokens", "naïve", "model",
                                 "answers", "🙂", "quickly", "and", "well", "stop", "here", "again"};
  std::uint64_t state = params.sampling.temperature == 0.0f ? 0 : params.sampling.seed;
  state ^= prompt.size() * 0x100000001b3ull;
  std::string text = "Fake reply:";
  for (int i = 0; i < options_.reply_words; ++i) {
    text += ' ';
    text += kWords[splitmix64_next(state) % (sizeof kWords / sizeof *kWords)];
  }
  return text + ".";
}

engine::GenerationResult FakeBackend::generate(int slot, const std::vector<std::int32_t>& prompt,
                                               const engine::GenerationParams& params,
                                               const engine::TokenCallback& on_token) {
  if (slot < 0 || slot >= options_.slots) throw std::logic_error("fake backend: slot out of range");
  if (slot_busy_[static_cast<std::size_t>(slot)].exchange(true)) throw std::logic_error("fake backend: slot used twice at once");
  struct Release {
    FakeBackend& b;
    int slot;
    std::int64_t kv = 0;
    ~Release() {
      b.kv_used_ -= kv;
      --b.active_;
      b.slot_busy_[static_cast<std::size_t>(slot)] = false;
    }
  } release{*this, slot};
  int now_active = ++active_;
  for (int m = max_active_.load(); now_active > m && !max_active_.compare_exchange_weak(m, now_active);) {}
  ++generations_;
  {
    std::lock_guard lock(mu_);
    seen_.params = params;
  }
  std::string prompt_text;
  for (auto id : prompt) prompt_text.push_back(static_cast<char>(id));
  if (prompt_text.find("__crash__") != std::string::npos) throw std::runtime_error("fake backend: simulated internal failure");
  if (params.embedding) {
    // A stand-in embedding: byte counts folded into 16 dimensions, averaged (not normalized,
    // as the engine's mean is not), so different texts give different vectors.
    engine::GenerationResult r;
    r.prompt_tokens = static_cast<int>(prompt.size());
    r.embedding.assign(16, 0.0f);
    for (auto id : prompt) r.embedding[static_cast<std::size_t>(id) % 16] += 1.0f / static_cast<float>(prompt.size());
    return r;
  }

  const std::string reply = reply_for(prompt, params);  // may throw ringlm::Error (bad schema)
  engine::GenerationResult r;
  r.prompt_tokens = static_cast<int>(prompt.size());
  // Like a real session, the slot keeps the tokens of its last exchange: a prompt that starts
  // with them reuses that prefix (reported as cached), anything else starts over.
  auto& history = slot_history_[static_cast<std::size_t>(slot)];
  std::size_t common = 0;
  while (common < history.size() && common < prompt.size() && history[common] == prompt[common]) ++common;
  r.cached_prompt_tokens = static_cast<int>(std::min(common, prompt.size() > 0 ? prompt.size() - 1 : 0));
  history = prompt;
  release.kv = static_cast<std::int64_t>(prompt.size());
  kv_used_ += release.kv;
  const auto start = std::chrono::steady_clock::now();

  std::string raw;          // bytes generated so far
  std::size_t emitted = 0;  // bytes of raw already delivered as text
  const int n = std::min<int>(params.max_tokens, static_cast<int>(reply.size()));
  r.finish = n < static_cast<int>(reply.size()) ? engine::FinishReason::Length : engine::FinishReason::Stop;
  for (int i = 0; i < n; ++i) {
    if (options_.token_delay.count() > 0) std::this_thread::sleep_for(options_.token_delay);
    raw.push_back(reply[static_cast<std::size_t>(i)]);
    ++release.kv;
    ++kv_used_;
    ++r.completion_tokens;
    history.push_back(static_cast<unsigned char>(reply[static_cast<std::size_t>(i)]));
    const bool last = i + 1 == n;
    engine::TokenEvent ev;
    ev.id = static_cast<unsigned char>(reply[static_cast<std::size_t>(i)]);
    ev.logprob = -0.05f - 0.1f * static_cast<float>(i % 7);
    for (int k = 0; k < params.top_logprobs; ++k) {
      ev.top.push_back({k == 0 ? ev.id : (ev.id + k) % 256, k == 0 ? ev.logprob : ev.logprob - 0.5f * static_cast<float>(k)});
    }
    // Deliver only complete characters, and hold back text that may begin a stop string.
    std::size_t complete = complete_utf8_prefix(raw);
    std::string visible = raw.substr(0, complete);
    std::size_t stop_at = std::string::npos;
    for (const auto& s : params.stop) stop_at = std::min(stop_at, visible.find(s));
    if (stop_at != std::string::npos) {
      ev.text = visible.substr(emitted, stop_at > emitted ? stop_at - emitted : 0);
      r.text = visible.substr(0, stop_at);
      r.finish = engine::FinishReason::Stop;
      if (!on_token(ev)) {
        r.finish = engine::FinishReason::Cancelled;
        ++cancellations_;
      }
      emitted = raw.size();
      break;
    }
    std::size_t safe = last ? visible.size() : visible.size() - stop_prefix_overlap(visible, params.stop);
    if (safe > emitted) {
      ev.text = visible.substr(emitted, safe - emitted);
      emitted = safe;
    }
    r.text = raw.substr(0, emitted);
    if (!on_token(ev)) {
      r.finish = engine::FinishReason::Cancelled;
      ++cancellations_;
      break;
    }
  }
  r.total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

ParsedReply FakeBackend::parse_reply(std::string_view text) {
  ParsedReply out;
  std::string rest(text);
  if (auto a = rest.find(kThinkOpen); a != std::string::npos) {
    auto b = rest.find(kThinkClose, a);
    if (b != std::string::npos) {
      out.reasoning = rest.substr(a + 7, b - a - 7);
      rest.erase(a, b + 8 - a);
    }
  }
  for (;;) {
    auto a = rest.find(kCallOpen);
    if (a == std::string::npos) break;
    auto b = rest.find(kCallClose, a);
    if (b == std::string::npos) break;
    json call = json::parse(rest.substr(a + 11, b - a - 11), nullptr, false);
    if (call.is_discarded() || !call.is_object() || !call.contains("name") || !call["name"].is_string()) break;
    json args = call.value("arguments", json::object());
    out.tool_calls.push_back({call["name"].get<std::string>(), args.is_object() ? args : json::object()});
    rest.erase(a, b + 12 - a);
  }
  out.content = rest;
  return out;
}

std::unique_ptr<ThoughtSplitter> FakeBackend::thought_splitter() { return std::make_unique<FakeThoughtSplitter>(); }

FakeBackend::Seen FakeBackend::last_seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

}  // namespace ringlm::server
