#pragma once
// Byte-level BPE as Hugging Face `tokenizers` defines it (models/bpe, pre_tokenizers/
// byte_level): every byte of the text is one symbol, written as a printable code point by
// GPT-2's table, and adjacent symbols are merged by the lowest-ranked rule, leftmost first.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attngeom {

// GPT-2's bytes_to_unicode: the printable bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) keep
// their code point; the others take 256, 257, ... in byte order.
const std::array<char32_t, 256>& byte_level_alphabet();

// `bytes` written in that alphabet, as UTF-8 (the spelling of tokenizer.json's vocab).
std::string byte_level_string(std::string_view bytes);

class BytePairModel {
 public:
  // `vocab`: byte-level spelling -> id; `merges`: rules in rank order. Throws InputError
  // "<source>: field 'model.merges[i]' ..." for a rule whose symbols or result are not in
  // the vocab, and "... 'model.vocab' ..." when a byte has no symbol.
  BytePairModel(std::unordered_map<std::string, int> vocab,
                const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
                const std::string& source);

  // Appends the ids of one pre-token (raw bytes). With ignore_merges a pre-token that is
  // itself in the vocab is one id, whatever the merges would give (as LLaMA-3 asks).
  void encode(std::string_view bytes, std::vector<int>& out) const;

  // The id of a byte-level spelling, or -1.
  int find(const std::string& spelling) const;

 private:
  struct Rule {
    int rank;
    int merged;
  };
  static std::uint64_t pair_key(int left, int right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
  }
  std::unordered_map<std::string, int> vocab_;
  std::array<int, 256> byte_ids_{};
  std::unordered_map<std::uint64_t, Rule> rules_;  // (left id, right id) -> rank, merged id
  bool ignore_merges_;
};

}  // namespace attngeom
