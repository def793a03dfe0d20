#pragma once
// The added tokens of a Hugging Face tokenizer (special tokens such as <|begin_of_text|>),
// found in text as `tokenizers` finds them: leftmost first, and of the tokens starting
// there the longest; `lstrip` / `rstrip` tokens take the whitespace on that side with them.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attngeom {

struct AddedToken {
  std::string content;
  int id = 0;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;  // matched in the normalised text rather than the raw text
};

// A stretch of text: an added token (token >= 0, its id) or text between tokens (token < 0).
struct TextSection {
  std::string_view text;
  int token = -1;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  // `text` cut into sections; empty text sections are left out.
  std::vector<TextSection> split(std::string_view text) const;
  bool empty() const { return tokens_.empty(); }

 private:
  std::vector<AddedToken> tokens_;               // longest first
  std::vector<std::size_t> by_first_byte_[256];  // indices into tokens_, longest first
};

}  // namespace attngeom
