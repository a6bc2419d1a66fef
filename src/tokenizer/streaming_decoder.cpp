// Streaming detokenizer: text is released as soon as it is complete UTF-8.
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

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
    // An ordinary token ends any byte run; an unfinished character in it is invalid.
    if (!pending_.empty()) {
      std::string bad;
      for (size_t k = 0; k < pending_.size(); ++k) bad.append(tok::kReplacementChar);
      pending_.clear();
      emit(bad, out);
    }
    emit(impl_->text[id], out);
    return;
  }
  pending_.push_back(static_cast<char>(impl_->byte_value[id]));
  // Release every complete character; keep a trailing prefix that may still complete.
  std::string ready;
  size_t i = 0;
  while (i < pending_.size()) {
    const size_t n = tok::utf8_char_len(pending_, i);
    if (n > 0) {
      ready.append(pending_, i, n);
      i += n;
    } else if (tok::utf8_is_incomplete_prefix(pending_, i)) {
      break;
    } else {
      ready.append(tok::kReplacementChar);  // a byte that can never be part of a character
      ++i;
    }
  }
  pending_.erase(0, i);
  if (!ready.empty()) emit(ready, out);
}

std::string StreamingDecoder::push(int32_t id) {
  std::string out;
  push_into(id, out);
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out;
  if (!pending_.empty()) {
    std::string bad;
    for (size_t k = 0; k < pending_.size(); ++k) bad.append(tok::kReplacementChar);
    pending_.clear();
    emit(bad, out);
  }
  started_ = false;
  leading_to_strip_ = impl_->strip_start;
  return out;
}

}  // namespace ringlm
