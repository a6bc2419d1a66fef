#include "chat/gemma_reply.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>

#include "chat/jinja/text.h"
#include "util/error.h"

namespace ringlm::chat {

namespace {

constexpr std::string_view kQuote = "<|\"|>";
constexpr std::string_view kChannelOpen = "<|channel>";
constexpr std::string_view kChannelClose = "<channel|>";
constexpr std::string_view kToolCallOpen = "<|tool_call>";
constexpr std::string_view kToolCallClose = "<tool_call|>";
constexpr int kMaxDepth = 256;

class ValueParser {
 public:
  explicit ValueParser(std::string_view s) : s_(s) {}

  nlohmann::ordered_json parse_all() {
    auto v = value(0);
    skip_ws();
    if (pos_ != s_.size()) error("unexpected text after the value");
    return v;
  }

  // Parses a value at the current position (used for the `{...}` of a tool call).
  nlohmann::ordered_json value(int depth) {
    if (depth > kMaxDepth) error("value nested too deeply");
    skip_ws();
    if (pos_ >= s_.size()) error("expected a value, got end of text");
    if (starts_with(kQuote)) return quoted_string();
    char c = s_[pos_];
    if (c == '"') return json_string();
    if (c == '{') return mapping(depth);
    if (c == '[') return list(depth);
    return scalar();
  }

  std::size_t pos() const { return pos_; }

 private:
  [[noreturn]] void error(const std::string& msg) const { fail("Gemma tool-call arguments at byte ", pos_, ": ", msg); }

  bool starts_with(std::string_view t) const { return s_.substr(pos_, t.size()) == t; }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }

  std::string quoted_string() {
    pos_ += kQuote.size();
    std::size_t end = s_.find(kQuote, pos_);
    if (end == std::string_view::npos) error("unterminated <|\"|> string");
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + kQuote.size();
    return out;
  }

  std::string json_string() {
    // A JSON string literal; find its end honouring backslash escapes, then let the JSON
    // parser decode the escapes.
    std::size_t i = pos_ + 1;
    while (i < s_.size() && s_[i] != '"') i += s_[i] == '\\' ? 2 : 1;
    if (i >= s_.size()) error("unterminated string");
    try {
      auto v = nlohmann::ordered_json::parse(s_.substr(pos_, i + 1 - pos_));
      pos_ = i + 1;
      return v.get<std::string>();
    } catch (const nlohmann::json::exception&) {
      error("invalid string escape");
    }
  }

  std::string key() {
    skip_ws();
    if (starts_with(kQuote)) return quoted_string();
    if (pos_ < s_.size() && s_[pos_] == '"') return json_string();
    std::size_t colon = s_.find(':', pos_);
    if (colon == std::string_view::npos) error("expected 'key:' in a mapping");
    std::string k = jinja::text::strip(s_.substr(pos_, colon - pos_), true, true);
    if (k.empty()) error("empty mapping key");
    if (k.find_first_of("{}[],") != std::string::npos) error("malformed mapping key");
    pos_ = colon;
    return k;
  }

  nlohmann::ordered_json mapping(int depth) {
    ++pos_;  // {
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return obj;
    }
    while (true) {
      std::string k = key();
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') error("expected ':' after a mapping key");
      ++pos_;
      obj[k] = value(depth + 1);
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return obj;
      }
      error("expected ',' or '}' in a mapping");
    }
  }

  nlohmann::ordered_json list(int depth) {
    ++pos_;  // [
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return arr;
    }
    while (true) {
      arr.push_back(value(depth + 1));
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return arr;
      }
      error("expected ',' or ']' in a list");
    }
  }

  nlohmann::ordered_json scalar() {
    std::size_t end = pos_;
    while (end < s_.size() && s_[end] != ',' && s_[end] != '}' && s_[end] != ']' && !s_.substr(end).starts_with(kQuote))
      ++end;
    std::string word = jinja::text::strip(s_.substr(pos_, end - pos_), true, true);
    if (word.empty()) error("expected a value");
    pos_ = end;
    if (word == "true") return true;
    if (word == "false") return false;
    if (word == "null" || word == "None") return nullptr;
    if (word == "True") return true;
    if (word == "False") return false;
    // Numbers as Python prints them (ints, floats, 1e-05); anything else is kept as text.
    std::int64_t i = 0;
    auto r = std::from_chars(word.data(), word.data() + word.size(), i);
    if (r.ec == std::errc() && r.ptr == word.data() + word.size()) return i;
    char* fend = nullptr;
    errno = 0;
    double d = std::strtod(word.c_str(), &fend);
    bool numeric_form = word.find_first_not_of("0123456789+-.eE") == std::string::npos;
    if (numeric_form && fend == word.c_str() + word.size() && errno == 0) return d;
    return word;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

// Length of the longest suffix of `s` that is a proper prefix of one of `markers`.
std::size_t partial_marker_suffix(std::string_view s, std::initializer_list<std::string_view> markers) {
  std::size_t hold = 0;
  for (auto m : markers) {
    for (std::size_t len = std::min(m.size() - 1, s.size()); len > hold; --len) {
      if (s.substr(s.size() - len) == m.substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  return hold;
}

}  // namespace

nlohmann::ordered_json parse_gemma_value(std::string_view text) { return ValueParser(text).parse_all(); }

void GemmaReplyStream::emit(Event::Kind kind, std::string_view text, std::vector<Event>& events) {
  if (text.empty()) return;
  if (!events.empty() && events.back().kind == kind && kind != Event::Kind::ToolCall) {
    events.back().text.append(text);
    return;
  }
  events.push_back(Event{kind, std::string(text), {}});
}

void GemmaReplyStream::finish_tool_call(std::vector<Event>& events) {
  std::string body = std::move(tool_body_);
  tool_body_.clear();
  auto raw = [&] { return std::string(kToolCallOpen) + body + std::string(kToolCallClose); };
  std::string_view b = body;
  std::size_t start = b.find_first_not_of(" \n\t");
  if (start == std::string_view::npos || b.substr(start, 5) != "call:") {
    emit(Event::Kind::Content, raw(), events);
    return;
  }
  std::size_t brace = b.find('{', start + 5);
  if (brace == std::string_view::npos) {
    emit(Event::Kind::Content, raw(), events);
    return;
  }
  ToolCall call;
  call.name = jinja::text::strip(b.substr(start + 5, brace - start - 5), true, true);
  std::string_view args = b.substr(brace);
  try {
    call.arguments = parse_gemma_value(jinja::text::strip(args, false, true));
  } catch (const Error&) {
    try {
      call.arguments = nlohmann::ordered_json::parse(args);
    } catch (const nlohmann::json::exception&) {
      emit(Event::Kind::Content, raw(), events);
      return;
    }
  }
  if (call.name.empty() || !call.arguments.is_object()) {
    emit(Event::Kind::Content, raw(), events);
    return;
  }
  events.push_back(Event{Event::Kind::ToolCall, "", std::move(call)});
}

void GemmaReplyStream::push(std::string_view piece, std::vector<Event>& events) {
  buffer_.append(piece);
  while (true) {
    std::string_view buf = buffer_;
    switch (state_) {
      case State::Content: {
        std::size_t ch = buf.find(kChannelOpen), tc = tool_calls_ ? buf.find(kToolCallOpen) : std::string_view::npos;
        std::size_t hit = std::min(ch, tc);
        if (hit == std::string_view::npos) {
          std::size_t hold = tool_calls_ ? partial_marker_suffix(buf, {kChannelOpen, kToolCallOpen})
                                         : partial_marker_suffix(buf, {kChannelOpen});
          emit(Event::Kind::Content, buf.substr(0, buf.size() - hold), events);
          buffer_.erase(0, buf.size() - hold);
          return;
        }
        emit(Event::Kind::Content, buf.substr(0, hit), events);
        const bool channel = hit == ch;
        buffer_.erase(0, hit + (channel ? kChannelOpen.size() : kToolCallOpen.size()));
        state_ = channel ? State::ChannelName : State::ToolCall;
        break;
      }
      case State::ChannelName: {
        // `<|channel>thought\n`: the channel name runs to the end of the line.
        std::size_t nl = buf.find('\n'), close = buf.find(kChannelClose);
        if (close != std::string_view::npos && (nl == std::string_view::npos || close < nl)) {
          buffer_.erase(0, close + kChannelClose.size());  // empty channel
          state_ = State::Content;
          break;
        }
        if (nl == std::string_view::npos) {
          if (buf.size() > 64) state_ = State::Thinking;  // no name line after all
          else return;
          break;
        }
        buffer_.erase(0, nl + 1);
        state_ = State::Thinking;
        break;
      }
      case State::Thinking: {
        std::size_t close = buf.find(kChannelClose);
        if (close == std::string_view::npos) {
          std::size_t hold = partial_marker_suffix(buf, {kChannelClose});
          emit(Event::Kind::Thinking, buf.substr(0, buf.size() - hold), events);
          buffer_.erase(0, buf.size() - hold);
          return;
        }
        emit(Event::Kind::Thinking, buf.substr(0, close), events);
        buffer_.erase(0, close + kChannelClose.size());
        state_ = State::Content;
        break;
      }
      case State::ToolCall: {
        std::size_t close = buf.find(kToolCallClose);
        if (close == std::string_view::npos) {
          std::size_t hold = partial_marker_suffix(buf, {kToolCallClose});
          tool_body_.append(buf.substr(0, buf.size() - hold));
          buffer_.erase(0, buf.size() - hold);
          return;
        }
        tool_body_.append(buf.substr(0, close));
        buffer_.erase(0, close + kToolCallClose.size());
        state_ = State::Content;
        finish_tool_call(events);
        break;
      }
    }
  }
}

void GemmaReplyStream::finish(std::vector<Event>& events) {
  switch (state_) {
    case State::Content:
      emit(Event::Kind::Content, buffer_, events);
      break;
    case State::ChannelName:  // only the channel name arrived: no thinking text
      break;
    case State::Thinking:
      emit(Event::Kind::Thinking, buffer_, events);
      break;
    case State::ToolCall:
      emit(Event::Kind::Content, std::string(kToolCallOpen) + tool_body_ + buffer_, events);
      break;
  }
  buffer_.clear();
  tool_body_.clear();
  state_ = State::Content;
}

GemmaReply parse_gemma_reply(std::string_view text) {
  GemmaReplyStream stream;
  std::vector<GemmaReplyStream::Event> events;
  stream.push(text, events);
  stream.finish(events);
  GemmaReply reply;
  for (auto& e : events) {
    switch (e.kind) {
      case GemmaReplyStream::Event::Kind::Content: reply.content += e.text; break;
      case GemmaReplyStream::Event::Kind::Thinking: reply.thinking += e.text; break;
      case GemmaReplyStream::Event::Kind::ToolCall: reply.tool_calls.push_back(std::move(e.tool_call)); break;
    }
  }
  reply.content = jinja::text::strip(reply.content, true, true);
  reply.thinking = jinja::text::strip(reply.thinking, true, true);
  return reply;
}

}  // namespace ringlm::chat
