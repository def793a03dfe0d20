#pragma once
// A Hugging Face tokenizer.json with a byte-level BPE model (GPT-2, LLaMA-3, Qwen2 and
// their kin), encoded as the `tokenizers` library does by default:
//   1. added tokens with normalized = false are split out of the raw text;
//   2. the rest is normalised (NFC, NFD, NFKC, NFKD, or a Sequence of them);
//   3. added tokens with normalized = true are split out of the normalised text;
//   4. the pre-tokenizer cuts the rest: Split (a regex or string, Isolated or Removed) and
//      ByteLevel (GPT-2's regex with use_regex, a prefix space with add_prefix_space);
//   5. byte-level BPE merges each piece (byte_level_bpe.h).
// What the file holds beyond that (other models, normalisers, pre-tokenizers, post-
// processors, single_word tokens) is refused by name, never approximated.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/added_tokens.h"
#include "io/byte_level_bpe.h"
#include "io/unicode_text.h"

namespace attngeom {

// One step of the pre-tokenizer: split every piece by `pattern`, keeping the matches as
// pieces of their own (Isolated) or dropping them (Removed); or, for the ByteLevel step,
// prefix a space (add_prefix_space) and split by GPT-2's regex (use_regex).
struct PreTokenizerStep {
  std::optional<UnicodeRegex> pattern;
  bool keep_matches = true;
  bool add_prefix_space = false;
  // A step after the ByteLevel one (Falcon's Digits and Split) matches the byte-level spelling
  // of each piece (byte_level_string), one code point per byte, as tokenizers does.
  bool on_byte_level = false;
};

struct HfTokenizerSpec {
  std::vector<NormalForm> normalizer;  // applied in order; empty: none
  std::vector<PreTokenizerStep> pre_tokenizer;
  std::optional<BytePairModel> model;
  std::vector<AddedToken> added_tokens;
  std::optional<int> bos_id;  // prepended when special tokens are added
  int vocab_size = 0;         // 1 + the largest id
};

// Reads `json_path` and, beside it, tokenizer_config.json if present (add_bos_token and
// bos_token override the post-processor's choice of BOS, as transformers' LLaMA-family
// tokenizers do). Throws InputError naming the file and field. Every id must be below
// `model_vocab`.
HfTokenizerSpec read_hf_tokenizer(const std::filesystem::path& json_path, int model_vocab);

// GPT-2's older tokenizer files in `model_dir`: vocab.json and merges.txt, with the special
// tokens of tokenizer_config.json's added_tokens_decoder, read as the tokenizer.json that
// transformers converts them to (ByteLevel with GPT-2's regex and no prefix space, byte-level
// BPE, no BOS unless tokenizer_config.json's add_bos_token asks for one).
HfTokenizerSpec read_gpt2_vocab_merges(const std::filesystem::path& model_dir, int model_vocab);

class HfTokenizer {
 public:
  explicit HfTokenizer(HfTokenizerSpec spec);

  // The ids of `text` (valid UTF-8), without BOS.
  std::vector<int> encode(const std::string& text) const;
  std::optional<int> bos_id() const { return spec_.bos_id; }
  int vocab_size() const { return spec_.vocab_size; }

 private:
  void encode_normalized(const std::string& text, std::vector<int>& ids) const;
  HfTokenizerSpec spec_;
  AddedTokenMatcher raw_tokens_;         // normalized = false
  AddedTokenMatcher normalized_tokens_;  // normalized = true, matched in normalised text
};

}  // namespace attngeom
