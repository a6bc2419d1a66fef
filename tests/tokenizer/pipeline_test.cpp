// The tokenizer's algorithm on small hand-made tokenizers, where the right answer can be
// worked out by hand from the Hugging Face semantics.
#include <gtest/gtest.h>

#include "tokenizer/text_pipeline.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer_test_util.h"

namespace ringlm {
namespace {

using Ids = std::vector<int32_t>;

// Vocabulary "a".."e", single characters at ids 0..4, then `extra` pieces from id 5 on.
TokenizerParts letters(std::vector<std::string> extra, std::vector<std::pair<std::string, std::string>> merges) {
  TokenizerParts p;
  int32_t id = 0;
  for (const char* c : {"a", "b", "c", "d", "e"}) p.vocab.emplace_back(p.own(c), id++);
  for (auto& e : extra) p.vocab.emplace_back(p.own(e), id++);
  for (auto& [l, r] : merges) p.merges.emplace_back(p.own(l), p.own(r));
  return p;
}

TEST(TokenizerPipeline, MergesApplyLowestRankFirst) {
  // "b c" outranks "a b": abc -> a + bc, and no rule joins a with bc.
  auto t1 = Tokenizer::from_parts(letters({"ab", "bc", "abc"}, {{"b", "c"}, {"a", "b"}, {"ab", "c"}}));
  EXPECT_EQ(t1.encode("abc"), (Ids{0, 6}));
  // The other order: ab first, then ab + c.
  auto t2 = Tokenizer::from_parts(letters({"ab", "bc", "abc"}, {{"a", "b"}, {"b", "c"}, {"ab", "c"}}));
  EXPECT_EQ(t2.encode("abc"), (Ids{7}));
}

TEST(TokenizerPipeline, EqualRanksMergeLeftmostFirst) {
  auto t = Tokenizer::from_parts(letters({"aa", "aaa"}, {{"a", "a"}, {"aa", "a"}}));
  EXPECT_EQ(t.encode("aa"), (Ids{5}));
  EXPECT_EQ(t.encode("aaa"), (Ids{6}));     // (aa)a -> aaa
  EXPECT_EQ(t.encode("aaaa"), (Ids{5, 5}));  // aa aa; "aa aa" is no rule
  EXPECT_EQ(t.encode("aaaaa"), (Ids{5, 6}));  // aa, then (aa)(a) at rank 1 only for the right pair
}

TEST(TokenizerPipeline, ByteFallbackUnknownAndFuseUnk) {
  auto with_bytes = letters({"<0xC3>", "<0xA9>", "<unk>"}, {});
  with_bytes.byte_fallback = true;
  with_bytes.unk_token = "<unk>";
  with_bytes.decoder = {{DecoderStep::Kind::kByteFallback}, {DecoderStep::Kind::kFuse}};
  auto t = Tokenizer::from_parts(with_bytes);
  EXPECT_EQ(t.encode("a\xC3\xA9" "b"), (Ids{0, 5, 6, 1}));  // é is not a piece: its bytes are
  EXPECT_EQ(t.decode(t.encode("a\xC3\xA9" "b")), "a\xC3\xA9" "b");
  with_bytes.decoder.clear();  // without a ByteFallback decoder the pieces are shown as they are
  EXPECT_EQ(Tokenizer::from_parts(with_bytes).decode(Ids{5, 6}), "<0xC3><0xA9>");
  EXPECT_EQ(t.encode("zz"), (Ids{7, 7}));  // no byte tokens for 'z': unknown, not fused

  auto fused = letters({"<unk>"}, {});
  fused.unk_token = "<unk>";
  fused.fuse_unk = true;
  auto f = Tokenizer::from_parts(fused);
  EXPECT_EQ(f.encode("azzzb"), (Ids{0, 5, 1}));
  EXPECT_EQ(f.encode("zazz"), (Ids{5, 0, 5}));
}

TEST(TokenizerPipeline, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  auto p = letters({"abc"}, {});  // no merge produces "abc"
  p.ignore_merges = true;
  EXPECT_EQ(Tokenizer::from_parts(p).encode("abc"), (Ids{5}));
  p.ignore_merges = false;
  EXPECT_EQ(Tokenizer::from_parts(p).encode("abc"), (Ids{0, 1, 2}));
}

TEST(TokenizerPipeline, AddedTokensLongestMatchAndParseSpecial) {
  auto p = letters({}, {});
  p.added_tokens.push_back({"<s>", 10, true});
  p.added_tokens.push_back({"<s>x", 11, false});
  p.added_tokens.push_back({"dd", 12, false});
  auto t = Tokenizer::from_parts(p);
  EXPECT_EQ(t.encode("a<s>b"), (Ids{0, 10, 1}));
  EXPECT_EQ(t.encode("a<s>xb"), (Ids{0, 11, 1}));  // longest match at the leftmost position
  EXPECT_EQ(t.encode("ddd"), (Ids{12, 3}));
  EncodeOptions plain;
  plain.parse_special = false;
  // The special "<s>" is plain text now ('<' 's' '>' have no pieces -> error), but the
  // non-special "<s>x" and "dd" are still matched, as Hugging Face's split_special_tokens does.
  EXPECT_EQ(t.encode("a<s>xdd", plain), (Ids{0, 11, 12}));
  EXPECT_THROW(t.encode("<s>", plain), Error);
  EXPECT_EQ(t.decode(Ids{0, 10, 1}), "a<s>b");
  EXPECT_EQ(t.decode(Ids{0, 10, 1}, true), "ab");
  EXPECT_TRUE(t.is_special(10));
  EXPECT_FALSE(t.is_special(11));
  EXPECT_EQ(t.token_bytes(10), "");
  EXPECT_EQ(t.token_bytes(11), "<s>x");
}

TEST(TokenizerPipeline, AddedTokenStripAndSingleWordFlags) {
  auto p = letters({" "}, {});
  AddedToken l{"<L>", 10};
  l.lstrip = true;
  AddedToken r{"<R>", 11};
  r.rstrip = true;
  AddedToken w{"cd", 12};
  w.single_word = true;
  p.added_tokens = {l, r, w};
  auto t = Tokenizer::from_parts(p);
  EXPECT_EQ(t.encode("a  <L> b"), (Ids{0, 10, 5, 1}));  // spaces left of <L> are swallowed
  EXPECT_EQ(t.encode("a <R>  b"), (Ids{0, 5, 11, 1}));  // spaces right of <R> are swallowed
  EXPECT_EQ(t.encode("a cd e"), (Ids{0, 5, 12, 5, 4}));
  EXPECT_EQ(t.encode("acd e"), (Ids{0, 2, 3, 5, 4}));  // inside a word: not a match
  EXPECT_EQ(t.encode("cdcd"), (Ids{2, 3, 2, 3}));
}

TEST(TokenizerPipeline, NormalizedAddedTokensMatchAfterTheNormalizer) {
  auto p = letters({"_"}, {});
  p.normalizer.push_back({NormalizerStep::Kind::kReplace, " ", "_"});
  AddedToken n{"a b", 10};
  n.normalized = true;  // matched as "a_b" in the normalized text
  p.added_tokens = {n};
  auto t = Tokenizer::from_parts(p);
  EXPECT_EQ(t.encode("ca bc"), (Ids{2, 10, 2}));
  EXPECT_EQ(t.encode("ca_bc"), (Ids{2, 10, 2}));  // the same after normalization
  EXPECT_EQ(t.encode("a  b"), (Ids{0, 5, 5, 1}));
}

TEST(TokenizerPipeline, LlamaStyleNormalizerAndStripDecoder) {
  TokenizerParts p;
  int32_t id = 0;
  for (const char* c : {"\xE2\x96\x81", "H", "i", "t", "\xE2\x96\x81" "H", "\xE2\x96\x81" "Hi"}) p.vocab.emplace_back(p.own(c), id++);
  p.merges.emplace_back(p.own("\xE2\x96\x81"), p.own("H"));
  p.merges.emplace_back(p.own("\xE2\x96\x81" "H"), p.own("i"));
  p.normalizer.push_back({NormalizerStep::Kind::kPrepend, "", "\xE2\x96\x81"});
  p.normalizer.push_back({NormalizerStep::Kind::kReplace, " ", "\xE2\x96\x81"});
  DecoderStep rep{DecoderStep::Kind::kReplace, "\xE2\x96\x81", " "};
  DecoderStep strip{DecoderStep::Kind::kStrip, "", " ", 1, 0};
  p.decoder = {rep, {DecoderStep::Kind::kByteFallback}, {DecoderStep::Kind::kFuse}, strip};
  auto t = Tokenizer::from_parts(p);
  EXPECT_EQ(t.encode("Hi Hi"), (Ids{5, 5}));
  EXPECT_EQ(t.decode(t.encode("Hi Hi")), "Hi Hi");
  StreamingDecoder sd(t);
  std::string streamed;
  for (int32_t i : t.encode("Hi Hi")) streamed += sd.push(i);
  EXPECT_EQ(streamed, "Hi Hi");
}

std::vector<std::string> split_with(SplitBehavior b, std::string_view text, bool invert = false) {
  PreTokenizerStep s;
  s.kind = PreTokenizerStep::Kind::kSplit;
  s.pattern = "-";
  s.behavior = b;
  s.invert = invert;
  tok::PreTokenizer pre({s});
  tok::PreTokenizerScratch scratch;
  pre.apply(text, true, scratch);
  return {scratch.words.begin(), scratch.words.end()};
}

TEST(TokenizerPipeline, SplitBehaviorsFollowHuggingFace) {
  using V = std::vector<std::string>;
  const std::string t = "the-final--countdown";
  EXPECT_EQ(split_with(SplitBehavior::kRemoved, t), (V{"the", "final", "countdown"}));
  EXPECT_EQ(split_with(SplitBehavior::kIsolated, t), (V{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split_with(SplitBehavior::kMergedWithPrevious, t), (V{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split_with(SplitBehavior::kMergedWithNext, t), (V{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split_with(SplitBehavior::kContiguous, t), (V{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(split_with(SplitBehavior::kRemoved, "a-b", /*invert=*/true), (V{"-"}));
  EXPECT_EQ(split_with(SplitBehavior::kRemoved, "plain"), (V{"plain"}));
}

TEST(TokenizerPipeline, MetaspacePreTokenizer) {
  PreTokenizerStep m;
  m.kind = PreTokenizerStep::Kind::kMetaspace;
  m.pattern = "\xE2\x96\x81";
  m.prepend = PreTokenizerStep::Prepend::kFirst;
  tok::PreTokenizer pre({m});
  tok::PreTokenizerScratch scratch;
  pre.apply("Hey  you", true, scratch);
  using V = std::vector<std::string>;
  EXPECT_EQ(V(scratch.words.begin(), scratch.words.end()), (V{"\xE2\x96\x81Hey", "\xE2\x96\x81", "\xE2\x96\x81you"}));
  pre.apply("you", false, scratch);  // not at the start of the input: no prepend for "first"
  EXPECT_EQ(V(scratch.words.begin(), scratch.words.end()), (V{"you"}));
}

// Cutting words before "▁" and the chunk cache must not change a single id.
TEST(TokenizerPipeline, ChunkedEncodingEqualsWholeWordEncoding) {
  const Tokenizer& tok = testing::gemma_tokenizer();
  const auto& model = tok.impl().model;
  const std::vector<std::string> parts = {" ", "  ", "   ", "the", "The", "x", ">", "</", "<", "!", "ing", "日本",
                                          "é", "\xF0\x93\x80\x80", "1", "22", "▁", "-", "don't", "\xE2\x80\x94"};
  uint64_t s = 99;
  auto rnd = [&] { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; };
  tok::BpeScratch scratch;
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    for (int k = 0, n = 1 + static_cast<int>(rnd() % 25); k < n; ++k) text += parts[rnd() % parts.size()];
    std::string word;
    for (char c : text) word += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    Ids chunked, whole;
    model.encode_word(word, chunked, scratch);
    model.encode_word(word, chunked, scratch);  // second time from the cache
    model.encode_word_uncached(word, whole, scratch);
    model.encode_word_uncached(word, whole, scratch);
    ASSERT_EQ(chunked, whole) << "text: " << text;
  }
}

}  // namespace
}  // namespace ringlm
