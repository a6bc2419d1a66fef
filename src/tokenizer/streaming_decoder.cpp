// Streaming detokenizer: text is released as soon as it is complete UTF-8.
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "util/utf8.h"

namespace ringlm {

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_special)
    : impl_(tokenizer.shared_impl()), skip_special_(skip_special) {
  leading_to_strip_ = impl_->strip_start;
}

void StreamingDecoder::emit(std::string_view text, std::string& out) {
  const std::string& strip = impl_->strip_char;
  while (leading_to_strip_ > 0 && !strip.empty() && !text.empty()) {
    if (text.substr(0, strip.size()) != strip) {
      leading_to_strip_ = 0;
      break;
    }
    text.remove_prefix(strip.size());
    --leading_to_strip_;
  }
  if (!text.empty()) leading_to_strip_ = 0;
  if (impl_->join_with_space && started_ && !text.empty()) out.push_back(' ');
  if (!text.empty()) started_ = true;
  out.append(text);
}

void StreamingDecoder::push_into(int32_t id, std::string& out) {
  impl_->check_id(id);
  if (skip_special_ && impl_->special[id]) return;
  if (impl_->byte_value[id] < 0 || impl_->join_with_space) {
    // An ordinary token ends any byte run; an unfinished character in it is invalid and
    // becomes one U+FFFD per byte, as in decode().
    for (size_t k = 0; k < pending_.size(); ++k) emit(utf8::kReplacementChar, out);
    pending_.clear();
    emit(impl_->text[id], out);
    return;
  }
  pending_.push_back(static_cast<char>(impl_->byte_value[id]));
  // Release every complete character; keep a trailing prefix that may still complete.
  const std::string_view bytes = pending_;
  size_t i = 0;
  while (i < bytes.size()) {
    const size_t n = utf8::char_len(bytes, i);
    if (n > 0) {
      emit(bytes.substr(i, n), out);
      i += n;
    } else if (utf8::is_incomplete_prefix(bytes, i)) {
      break;
    } else {
      emit(utf8::kReplacementChar, out);  // a byte that can never be part of a character
      ++i;
    }
  }
  pending_.erase(0, i);
}

std::string StreamingDecoder::push(int32_t id) {
  std::string out;
  push_into(id, out);
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out;
  for (size_t k = 0; k < pending_.size(); ++k) emit(utf8::kReplacementChar, out);
  pending_.clear();
  started_ = false;
  leading_to_strip_ = impl_->strip_start;
  return out;
}

}  // namespace ringlm
