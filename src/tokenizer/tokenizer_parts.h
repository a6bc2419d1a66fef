// The format-neutral description of a tokenizer: vocabulary, merges, added tokens and the
// text pipeline (normalizer, pre-tokenizer, decoder) as plain data. Loaders (tokenizer.json,
// GGUF metadata) produce a TokenizerParts; Tokenizer::from_parts() turns it into the fast
// tables. Nothing in here is specific to one model.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringlm {

// A token matched as a whole in the input text before the model runs (Hugging Face
// "added_tokens"). Flags have the Hugging Face meaning.
struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;      // control token: skipped by decode(skip_special), blocked by parse_special=false
  bool lstrip = false;       // the match swallows whitespace on its left
  bool rstrip = false;       // the match swallows whitespace on its right
  bool single_word = false;  // only matched when not adjacent to word characters
  bool normalized = false;   // matched in the normalized text instead of the raw text
};

// One normalizer step (a Hugging Face "Sequence" is flattened into a list of steps).
struct NormalizerStep {
  enum class Kind { kReplace, kPrepend, kStrip };
  Kind kind = Kind::kReplace;
  std::string pattern;  // kReplace: literal text to find
  std::string content;  // kReplace: replacement; kPrepend: text put in front of non-empty input
  bool strip_left = false, strip_right = false;  // kStrip
};

// How a Split pre-tokenizer treats the delimiter it finds (Hugging Face SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// One pre-tokenizer step (Sequence flattened).
struct PreTokenizerStep {
  enum class Kind { kSplit, kMetaspace };
  Kind kind = Kind::kSplit;
  std::string pattern;  // kSplit: literal delimiter; kMetaspace: the replacement character (e.g. "▁")
  SplitBehavior behavior = SplitBehavior::kRemoved;  // kSplit
  bool invert = false;                               // kSplit
  enum class Prepend { kAlways, kNever, kFirst };
  Prepend prepend = Prepend::kAlways;  // kMetaspace
  bool split = true;                   // kMetaspace: also split before each replacement char
};

// One decoder step (Sequence flattened). ByteFallback turns "<0xNN>" pieces into raw bytes;
// Fuse joins tokens (always implied: decode() returns one string).
struct DecoderStep {
  enum class Kind { kReplace, kByteFallback, kFuse, kStrip, kMetaspace };
  Kind kind = Kind::kReplace;
  std::string pattern;  // kReplace: literal; kMetaspace: replacement character
  std::string content;  // kReplace: replacement; kStrip: the character stripped
  int start = 0, stop = 0;  // kStrip: how many leading / trailing `content` to remove
  bool strip_first_space = true;  // kMetaspace: drop the space the prepend scheme added
};

struct TokenizerParts {
  // --- the BPE model ---
  // The vocabulary and merges are views (a tokenizer has ~10^6 of them; copying each into
  // its own std::string would dominate load time). The bytes they point into must stay
  // alive until from_parts() returns: put their owner in `storage` (e.g. the parsed JSON
  // document or the mapped GGUF file), or copy strings in with own().
  std::vector<std::shared_ptr<const void>> storage;
  // Model vocabulary: (piece, id). Ids need not be dense; holes decode to nothing.
  std::vector<std::pair<std::string_view, int32_t>> vocab;
  // Merge rules in rank order (rank = index): left piece, right piece.
  std::vector<std::pair<std::string_view, std::string_view>> merges;
  std::string unk_token;  // may be empty (no unknown token)
  bool byte_fallback = false;
  bool fuse_unk = false;
  bool ignore_merges = false;  // a word that is itself in the vocab skips the merges

  // --- tokens matched before the model ---
  std::vector<AddedToken> added_tokens;

  // --- text pipeline ---
  std::vector<NormalizerStep> normalizer;
  std::vector<PreTokenizerStep> pre_tokenizer;
  std::vector<DecoderStep> decoder;
  bool has_decoder = true;  // false: decode joins pieces with spaces, as Hugging Face does without one

  // --- special ids (from tokenizer_config.json / generation_config.json / GGUF) ---
  int32_t bos_id = -1;           // -1: none
  std::vector<int32_t> eos_ids;  // stop ids, deduplicated, in the order found
  bool add_bos_default = false;  // tokenizer_config add_bos_token

  // Keeps a copy of `s` alive with these parts and returns a view of it.
  std::string_view own(std::string s) {
    if (!owned_) {
      owned_ = std::make_shared<std::deque<std::string>>();
      storage.push_back(owned_);
    }
    return owned_->emplace_back(std::move(s));
  }

 private:
  std::shared_ptr<std::deque<std::string>> owned_;
};

}  // namespace ringlm
