// Byte-level BPE pieces against hand-computed cases: GPT-2's byte alphabet, the merge
// loop's order (lowest rank, then leftmost), ignore_merges, the added-token matcher and
// the LLaMA-3 Split regex under PCRE2.
#include "io/hf_tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/added_tokens.h"
#include "io/byte_level_bpe.h"
#include "io/unicode_text.h"
#include "temp_dir.h"
#include "util/error.h"

namespace attngeom {
namespace {

using Merges = std::vector<std::pair<std::string, std::string>>;

// Every byte's symbol (ids 0..255 in byte order), then `extra` spellings from 256 on.
std::unordered_map<std::string, int> vocab_with(const std::vector<std::string>& extra) {
  std::unordered_map<std::string, int> vocab;
  for (int b = 0; b < 256; ++b) vocab[byte_level_string(std::string(1, static_cast<char>(b)))] = b;
  for (const std::string& s : extra) vocab.emplace(s, static_cast<int>(vocab.size()));
  return vocab;
}

std::vector<int> encode(const BytePairModel& model, const std::string& text) {
  std::vector<int> ids;
  model.encode(text, ids);
  return ids;
}

TEST(ByteLevelAlphabet, MatchesGpt2Table) {
  const auto& t = byte_level_alphabet();
  EXPECT_EQ(t['A'], U'A');
  EXPECT_EQ(t['!'], U'!');
  EXPECT_EQ(t[0x00], char32_t{0x100});  // the first unprintable byte
  EXPECT_EQ(t[' '], char32_t{0x120});   // 'Ġ'
  EXPECT_EQ(t['\n'], char32_t{0x10a});  // 'Ċ'
  EXPECT_EQ(t[0x7f], char32_t{0x121});  // after the 33 controls and space
  EXPECT_EQ(t[0xad], char32_t{0x143});  // soft hyphen, the last unprintable byte
  EXPECT_EQ(t[0xa9], char32_t{0xa9});
  EXPECT_EQ(byte_level_string(" hi\n"), "\xc4\xa0hi\xc4\x8a");   // "Ġhi" + "Ċ"
  EXPECT_EQ(byte_level_string("\xc3\xa9"), "\xc3\x83\xc2\xa9");  // é's bytes C3 A9 -> "Ã©"
}

TEST(BytePairModel, MergesLowestRankFirstThenLeftmost) {
  const auto vocab = vocab_with({"ab", "bc", "aa", "abc"});
  // Rank decides: (b c) before (a b) gives a + bc.
  const BytePairModel bc_first(vocab, Merges{{"b", "c"}, {"a", "b"}}, false, "test");
  EXPECT_EQ(encode(bc_first, "abc"), (std::vector<int>{'a', vocab.at("bc")}));
  const BytePairModel ab_first(vocab, Merges{{"a", "b"}, {"b", "c"}, {"ab", "c"}}, false, "test");
  EXPECT_EQ(encode(ab_first, "abc"), (std::vector<int>{vocab.at("abc")}));
  EXPECT_EQ(encode(ab_first, "abcab"), (std::vector<int>{vocab.at("abc"), vocab.at("ab")}));
  // Equal ranks: the leftmost pair merges first, so "aaa" is aa + a.
  const BytePairModel aa(vocab, Merges{{"a", "a"}}, false, "test");
  EXPECT_EQ(encode(aa, "aaa"), (std::vector<int>{vocab.at("aa"), 'a'}));
  EXPECT_EQ(encode(aa, "aaaa"), (std::vector<int>{vocab.at("aa"), vocab.at("aa")}));
  EXPECT_EQ(encode(aa, ""), std::vector<int>{});
  EXPECT_EQ(encode(aa, "x"), std::vector<int>{'x'});
}

TEST(BytePairModel, IgnoreMergesTakesAWholePieceInTheVocab) {
  const auto vocab = vocab_with({"ab", "abd"});
  const Merges merges{{"a", "b"}};
  EXPECT_EQ(encode(BytePairModel(vocab, merges, false, "t"), "abd"), (std::vector<int>{vocab.at("ab"), 'd'}));
  EXPECT_EQ(encode(BytePairModel(vocab, merges, true, "t"), "abd"), (std::vector<int>{vocab.at("abd")}));
  // A space is 'Ġ' in the vocab's spelling.
  const auto spaced =
      vocab_with({"\xc4\xa0"
                  "a"});
  EXPECT_EQ(encode(BytePairModel(spaced, Merges{{"\xc4\xa0", "a"}}, false, "t"), " a"),
            (std::vector<int>{spaced.at("\xc4\xa0"
                                        "a")}));
}

TEST(BytePairModel, RefusesRulesOutsideTheVocab) {
  const auto vocab = vocab_with({"ab"});
  try {
    BytePairModel(vocab, Merges{{"a", "b"}, {"ab", "q"}}, false, "tok.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "tok.json: field 'model.merges[1]' makes 'abq', which is not in model.vocab");
  }
  EXPECT_THROW(BytePairModel(vocab, Merges{{"zz", "b"}}, false, "t"), InputError);
  std::unordered_map<std::string, int> no_bytes{{"a", 0}};
  EXPECT_THROW(BytePairModel(no_bytes, Merges{}, false, "t"), InputError);
}

TEST(AddedTokenMatcher, LongestMatchFirstAndStrips) {
  const AddedTokenMatcher matcher({{"<|m|>", 1}, {"<|m|>!", 2}, {"<L>", 3, true, false}, {"<R>", 4, false, true}});
  const auto sections = matcher.split("a<|m|>!b<|m|> x  <L> y <R>  z");
  std::vector<std::pair<std::string, int>> got;
  for (const TextSection& s : sections) got.emplace_back(std::string(s.text), s.token);
  const std::vector<std::pair<std::string, int>> want = {
      {"a", -1}, {"<|m|>!", 2}, {"b", -1}, {"<|m|>", 1}, {" x", -1}, {"<L>", 3}, {" y ", -1}, {"<R>", 4}, {"z", -1}};
  EXPECT_EQ(got, want);
}

TEST(UnicodeRegex, Llama3SplitPattern) {
  const UnicodeRegex re(
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
      "test");
  const std::string text = "Héllo world'S 12345  мир!\n\n";
  std::vector<std::string> pieces;
  for (const auto& [b, e] : re.find_all(text)) pieces.push_back(text.substr(b, e - b));
  const std::vector<std::string> want = {"Héllo", " world", "'S", " ", "123", "45", " ", " мир", "!\n\n"};
  EXPECT_EQ(pieces, want);
  EXPECT_THROW(UnicodeRegex("[\\p{L}", "bad"), InputError);
}

// BLOOM's Split pattern: Oniguruma reads the nested class as a union, so the pieces are runs of
// anything but white space, '(', '|', ')' and the listed punctuation, each after an optional space.
TEST(UnicodeRegex, BloomsNestedClassIsTheUnionOfItsMembers) {
  const UnicodeRegex re(" ?[^(\\s|[.,!?…。，、।۔،])]+", "test");
  const std::string text = "Hello, world! (a|b) 你好。再见…ok";
  std::vector<std::string> pieces;
  for (const auto& [b, e] : re.find_all(text)) pieces.push_back(text.substr(b, e - b));
  const std::vector<std::string> want = {"Hello", " world", "a", "b", " 你好", "再见", "ok"};
  EXPECT_EQ(pieces, want);
  const UnicodeRegex posix("[[:digit:][ab]]+", "test");  // a POSIX class stays one
  const std::string digits = "x12ab3-";
  ASSERT_EQ(posix.find_all(digits).size(), 1u);
  EXPECT_EQ(posix.find_all(digits)[0], std::make_pair(std::size_t{1}, std::size_t{6}));
  EXPECT_THROW(UnicodeRegex("[a[^b]]", "negated"), InputError);
  EXPECT_THROW(UnicodeRegex("[a-z&&[b-d]]", "intersection"), InputError);
}

TEST(UnicodeText, NormalFormsAndSpaces) {
  EXPECT_EQ(normalize_unicode("e\xcc\x81", NormalForm::kNfc), "\xc3\xa9");  // e + U+0301 -> é
  EXPECT_EQ(normalize_unicode("\xc3\xa9", NormalForm::kNfd), "e\xcc\x81");
  EXPECT_EQ(normalize_unicode("\xef\xac\x81", NormalForm::kNfkc), "fi");  // the ligature ﬁ
  EXPECT_TRUE(is_unicode_space(U'\u3000'));
  EXPECT_TRUE(is_unicode_space(U'\u0085'));
  EXPECT_FALSE(is_unicode_space(U'\u200b'));
}

// GPT-2's vocab.json + merges.txt read as the tokenizer.json transformers converts them to: the
// ByteLevel pre-tokenizer with GPT-2's regex, no BOS, tokenizer_config.json's special tokens.
class Gpt2VocabMerges : public testing_support::TempDir {
 protected:
  // Every byte's symbol (ids 0-255), then "ab" 256, "\u0120ab" 257 (\u0120 is GPT-2's space)
  // and <|endoftext|> 258.
  void write_files(const std::string& merges, const std::string& config) {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) vocab[byte_level_string(std::string(1, static_cast<char>(b)))] = b;
    vocab["ab"] = 256;
    vocab[byte_level_string(" ") + "ab"] = 257;
    vocab["<|endoftext|>"] = 258;
    write("vocab.json", vocab.dump());
    write("merges.txt", merges);
    if (!config.empty()) write("tokenizer_config.json", config);
  }
};

TEST_F(Gpt2VocabMerges, ReadsTheSplitTheMergesAndTheSpecialTokens) {
  write_files("#version: 0.2\na b\n" + byte_level_string(" ") + " ab\n",
              R"({"added_tokens_decoder": {"258": {"content": "<|endoftext|>", "special": true}}})");
  const HfTokenizer tokenizer(read_gpt2_vocab_merges(dir_, 259));
  // " b" has no merge: its bytes' ids, ' ' (32) and 'b' (98).
  EXPECT_EQ(tokenizer.encode("ab ab<|endoftext|>ab b"), (std::vector<int>{256, 257, 258, 256, 32, 98}));
  EXPECT_FALSE(tokenizer.bos_id().has_value());
}

TEST_F(Gpt2VocabMerges, RefusesBadLinesAndIdsNamingTheFile) {
  write_files("#version: 0.2\na b c\n", "");
  EXPECT_NE(testing_support::error_of([&] { read_gpt2_vocab_merges(dir_, 259); }).find("merges.txt: line 2"),
            std::string::npos);
  write_files("a b\n", R"({"added_tokens_decoder": {"five": {"content": "<|endoftext|>"}}})");
  EXPECT_NE(testing_support::error_of([&] { read_gpt2_vocab_merges(dir_, 259); }).find("added_tokens_decoder.five"),
            std::string::npos);
}

// Falcon's pre-tokenizer (tokenizers' Punctuation, ByteLevel, Digits, Split): Punctuation runs
// split off before the byte-level regex; Digits and Split match the byte-level spelling, where
// tokenizers' char::is_numeric also takes the Latin-1 digits some UTF-8 continuation bytes spell.
class FalconPreTokenizer : public testing_support::TempDir {
 protected:
  // Every byte's symbol (ids 0-255), then "Ð²" 256 (the spelling of "в"), ".." 257, "..." 258,
  // "Ġ..." 259, "12" 260, "123" 261.
  void write_tokenizer(const nlohmann::json& pre_tokenizer) {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) vocab[byte_level_string(std::string(1, static_cast<char>(b)))] = b;
    const std::string space = byte_level_string(" ");
    const std::string ve = byte_level_string("\xd0\xb2");
    const std::vector<std::string> added = {ve, "..", "...", space + "...", "12", "123"};
    for (std::size_t i = 0; i < added.size(); ++i) vocab[added[i]] = 256 + static_cast<int>(i);
    const nlohmann::json merges = {ve.substr(0, 2) + " " + ve.substr(2), ". .", ".. .", space + " ...", "1 2", "12 3"};
    const nlohmann::json tokenizer = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
                                      {"pre_tokenizer", pre_tokenizer}};
    write("tokenizer.json", tokenizer.dump());
  }
  std::vector<int> encode(const std::string& text) {
    return HfTokenizer(read_hf_tokenizer(dir_ / "tokenizer.json", 262)).encode(text);
  }
};

TEST_F(FalconPreTokenizer, SplitsPunctuationRunsThenDigitsInTheByteLevelSpelling) {
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  write_tokenizer({{"type", "Sequence"},
                   {"pretokenizers",
                    {{{"type", "Punctuation"}, {"behavior", "Contiguous"}},
                     byte_level,
                     {{"type", "Digits"}, {"individual_digits", false}},
                     {{"type", "Split"}, {"pattern", {{"Regex", "[0-9][0-9][0-9]"}}}, {"behavior", "Isolated"}}}}});
  EXPECT_EQ(encode("x ..."), (std::vector<int>{120, 32, 258}));   // " " and "..." apart: no "Ġ..."
  EXPECT_EQ(encode("1234"), (std::vector<int>{261, 52}));         // "123" split off, then "4"
  EXPECT_EQ(encode("\xd0\xb2"), (std::vector<int>{0xd0, 0xb2}));  // "Ð" | "²": U+00B2 is numeric
  write_tokenizer(byte_level);                                    // the same text without those steps
  EXPECT_EQ(encode("x ..."), (std::vector<int>{120, 259}));
  EXPECT_EQ(encode("1234"), (std::vector<int>{261, 52}));  // one piece: "123" then "4" by the merges
  EXPECT_EQ(encode("\xd0\xb2"), (std::vector<int>{256}));
  write_tokenizer(
      {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byte_level}}});
  EXPECT_EQ(encode("1234"), (std::vector<int>{49, 50, 51, 52}));
  write_tokenizer(
      {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Punctuation"}, {"behavior", "Removed"}}, byte_level}}});
  EXPECT_EQ(encode("x ..."), (std::vector<int>{120, 32}));
}

TEST_F(FalconPreTokenizer, RefusesWhatItDoesNotBuildNamingTheField) {
  const nlohmann::json byte_level = {{"type", "ByteLevel"}};
  write_tokenizer({{"type", "Sequence"},
                   {"pretokenizers", {{{"type", "Punctuation"}, {"behavior", "MergedWithNext"}}, byte_level}}});
  EXPECT_NE(testing_support::error_of([&] { encode("x"); }).find("'MergedWithNext'"), std::string::npos);
  write_tokenizer({{"type", "Sequence"}, {"pretokenizers", {byte_level, byte_level}}});
  EXPECT_NE(testing_support::error_of([&] { encode("x"); }).find("second ByteLevel"), std::string::npos);
  write_tokenizer({{"type", "Sequence"}, {"pretokenizers", {{{"type", "Metaspace"}}, byte_level}}});
  EXPECT_NE(testing_support::error_of([&] { encode("x"); }).find("'Metaspace'"), std::string::npos);
}

}  // namespace
}  // namespace attngeom
