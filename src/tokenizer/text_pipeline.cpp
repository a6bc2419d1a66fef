#include "tokenizer/text_pipeline.h"

#include <algorithm>
#include <cstring>

#include "util/utf8.h"

namespace ringlm::tok {
namespace {

void replace_all(std::string_view in, std::string_view pattern, std::string_view with, std::string& out) {
  out.clear();
  if (pattern.empty()) {
    out.append(in);
    return;
  }
  size_t pos = 0;
  for (;;) {
    const size_t hit = in.find(pattern, pos);
    if (hit == std::string_view::npos) break;
    out.append(in.substr(pos, hit - pos));
    out.append(with);
    pos = hit + pattern.size();
  }
  out.append(in.substr(pos));
}

// Byte range of `s` without leading / trailing Unicode whitespace.
std::string_view strip_spaces(std::string_view s, bool left, bool right) {
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e) {
      const size_t n = utf8::char_len(s, b);
      if (n == 0 || !utf8::is_white_space(utf8::decode_at(s, b, n))) break;
      b += n;
    }
  }
  if (right) {
    // Walk forward remembering where the trailing whitespace run starts.
    size_t run = e;
    for (size_t i = b; i < e;) {
      size_t n = utf8::char_len(s, i);
      const bool space = n != 0 && utf8::is_white_space(utf8::decode_at(s, i, n));
      if (n == 0) n = 1;
      if (space) {
        if (run == e) run = i;
      } else {
        run = e;
      }
      i += n;
    }
    e = run;
  }
  return s.substr(b, e - b);
}

}  // namespace

void Normalizer::apply(std::string_view in, std::string& out, std::string& tmp) const {
  out.assign(in);
  for (const NormalizerStep& step : steps_) {
    switch (step.kind) {
      case NormalizerStep::Kind::kReplace:
        if (out.find(step.pattern) == std::string::npos) break;
        replace_all(out, step.pattern, step.content, tmp);
        out.swap(tmp);
        break;
      case NormalizerStep::Kind::kPrepend:
        if (!out.empty()) out.insert(0, step.content);
        break;
      case NormalizerStep::Kind::kStrip: {
        const std::string_view kept = strip_spaces(out, step.strip_left, step.strip_right);
        tmp.assign(kept);
        out.swap(tmp);
        break;
      }
    }
  }
}

namespace {

struct Span {
  size_t begin, end;
  bool is_match;
};

// Hugging Face's Split on a literal pattern, including its delimiter behaviours.
void split_word(std::string_view word, const PreTokenizerStep& step, std::vector<std::string_view>& out) {
  if (!step.invert && (step.pattern.empty() || word.find(step.pattern) == std::string_view::npos)) {
    out.push_back(word);  // common case (e.g. Gemma: spaces are already "▁"): nothing to split
    return;
  }
  std::vector<Span> spans;
  size_t pos = 0;
  if (!step.pattern.empty()) {
    for (;;) {
      const size_t hit = word.find(step.pattern, pos);
      if (hit == std::string_view::npos) break;
      if (hit > pos) spans.push_back({pos, hit, false});
      spans.push_back({hit, hit + step.pattern.size(), true});
      pos = hit + step.pattern.size();
    }
  }
  if (pos < word.size()) spans.push_back({pos, word.size(), false});
  if (step.invert)
    for (Span& s : spans) s.is_match = !s.is_match;

  std::vector<Span> pieces;
  bool previous_match = false;
  switch (step.behavior) {
    case SplitBehavior::kRemoved:
      for (const Span& s : spans)
        if (!s.is_match) pieces.push_back(s);
      break;
    case SplitBehavior::kIsolated:
      for (const Span& s : spans) pieces.push_back(s);
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !pieces.empty()) {
          pieces.back().end = s.end;
        } else {
          pieces.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (size_t k = spans.size(); k-- > 0;) {
        const Span& s = spans[k];
        if (s.is_match && !previous_match && !pieces.empty()) {
          pieces.back().begin = s.begin;
        } else {
          pieces.push_back(s);
        }
        previous_match = s.is_match;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
    case SplitBehavior::kContiguous:
      for (const Span& s : spans) {
        if (s.is_match == previous_match && !pieces.empty()) {
          pieces.back().end = s.end;
        } else {
          pieces.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
  }
  for (const Span& s : pieces)
    if (s.end > s.begin) out.push_back(word.substr(s.begin, s.end - s.begin));
}

}  // namespace

void PreTokenizer::apply(std::string_view text, bool at_origin, PreTokenizerScratch& scratch) const {
  auto& words = scratch.words;
  words.clear();
  scratch.store.clear();
  if (text.empty()) return;
  words.push_back(text);
  for (const PreTokenizerStep& step : steps_) {
    auto& next = scratch.next;
    next.clear();
    for (size_t w = 0; w < words.size(); ++w) {
      const std::string_view word = words[w];
      if (step.kind == PreTokenizerStep::Kind::kSplit) {
        split_word(word, step, next);
        continue;
      }
      // Metaspace: spaces become the replacement, which is optionally prepended, then the
      // word is split in front of every replacement character.
      std::string& s = scratch.store.emplace_back();
      replace_all(word, " ", step.pattern, s);
      const bool prepend = step.prepend == PreTokenizerStep::Prepend::kAlways ||
                           (step.prepend == PreTokenizerStep::Prepend::kFirst && at_origin && w == 0);
      if (prepend && s.compare(0, step.pattern.size(), step.pattern) != 0) s.insert(0, step.pattern);
      if (!step.split) {
        next.push_back(s);
        continue;
      }
      PreTokenizerStep as_split;
      as_split.pattern = step.pattern;
      as_split.behavior = SplitBehavior::kMergedWithNext;
      split_word(s, as_split, next);
    }
    words.swap(next);
  }
}

}  // namespace ringlm::tok
