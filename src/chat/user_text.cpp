#include "chat/user_text.h"

namespace ringlm::chat {

namespace {

// U+FDD0..U+FDD2: noncharacters, "permanently reserved for internal use" (Unicode 3.1 C.5).
constexpr std::string_view kOpen = "\xEF\xB7\x90";    // after a marked token's first character
constexpr std::string_view kClose = "\xEF\xB7\x91";   // after its last byte
constexpr std::string_view kEscape = "\xEF\xB7\x92";  // before a marker character the user wrote

bool is_marker_at(std::string_view s, std::size_t i) {
  return s.compare(i, 3, kOpen) == 0 || s.compare(i, 3, kClose) == 0 || s.compare(i, 3, kEscape) == 0;
}

void append_escaped(std::string& out, std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (static_cast<unsigned char>(s[i]) == 0xEF && is_marker_at(s, i)) out += kEscape;
    out += s[i];
  }
}

std::size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

std::string mark_string(const std::string& s, const Tokenizer& tokenizer) {
  std::string out;
  std::size_t pos = 0;
  for (;;) {
    const TextRange t = find_special_token(tokenizer, s, pos);
    if (t.begin == std::string_view::npos) break;
    append_escaped(out, std::string_view(s).substr(pos, t.begin - pos));
    const std::size_t first = std::min(utf8_length(static_cast<unsigned char>(s[t.begin])), t.end - t.begin);
    out.append(s, t.begin, first);
    out += kOpen;
    out.append(s, t.begin + first, t.end - t.begin - first);
    out += kClose;
    pos = t.end;
  }
  if (pos == 0) return s;
  append_escaped(out, std::string_view(s).substr(pos));
  return out;
}

}  // namespace

nlohmann::ordered_json mark_control_tokens(const nlohmann::ordered_json& value, const Tokenizer& tokenizer) {
  if (value.is_string()) return mark_string(value.get_ref<const std::string&>(), tokenizer);
  if (value.is_array()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& v : value) out.push_back(mark_control_tokens(v, tokenizer));
    return out;
  }
  if (value.is_object()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [k, v] : value.items()) out[mark_string(k, tokenizer)] = mark_control_tokens(v, tokenizer);
    return out;
  }
  return value;
}

std::string strip_markers(std::string_view text, std::vector<TextRange>& plain) {
  std::string out;
  out.reserve(text.size());
  std::size_t last_char = 0;  // where the last character written to `out` starts
  std::size_t open = std::string::npos;
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) == 0xEF && is_marker_at(text, i)) {
      const std::string_view m = text.substr(i, 3);
      if (m == kEscape && i + 3 < text.size() && is_marker_at(text, i + 3)) {
        last_char = out.size();
        out.append(text.substr(i + 3, 3));
        i += 6;
        continue;
      }
      if (m == kOpen) open = last_char;
      if (m == kClose && open != std::string::npos) {
        plain.push_back({open, out.size()});
        open = std::string::npos;
      }
      i += 3;  // a marker the template split up is dropped
      continue;
    }
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) last_char = out.size();
    out += text[i++];
  }
  return out;
}

MarkedPrompt render_marked(const ChatTemplate& tmpl, const Tokenizer& tokenizer, const ChatRequest& request,
                           bool trust_control_tokens) {
  MarkedPrompt out;
  if (trust_control_tokens) {
    out.text = tmpl.render(request);
    return out;
  }
  ChatRequest marked = request;
  marked.messages = mark_control_tokens(request.messages, tokenizer);
  if (!request.tools.is_null()) marked.tools = mark_control_tokens(request.tools, tokenizer);
  out.text = strip_markers(tmpl.render(marked), out.plain);
  return out;
}

std::vector<std::int32_t> encode_chat(const ChatTemplate& tmpl, const Tokenizer& tokenizer, const ChatRequest& request,
                                      bool trust_control_tokens) {
  const MarkedPrompt prompt = render_marked(tmpl, tokenizer, request, trust_control_tokens);
  std::vector<std::int32_t> ids;
  encode_with_plain_ranges(tokenizer, prompt.text, prompt.plain, ids);
  return ids;
}

}  // namespace ringlm::chat
