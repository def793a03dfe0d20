#include "io/added_tokens.h"

#include <algorithm>

#include "io/unicode_text.h"

namespace attngeom {
namespace {

// Byte length of the Unicode whitespace that ends / starts `text`.
std::size_t trailing_space(std::string_view text) {
  std::size_t end = text.size();
  while (end > 0) {
    std::size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xc0) == 0x80) --start;
    std::size_t length = 0;
    if (!is_unicode_space(decode_utf8(text, start, &length))) break;
    end = start;
  }
  return text.size() - end;
}

std::size_t leading_space(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t length = 0;
    if (!is_unicode_space(decode_utf8(text, i, &length))) break;
    i += length;
  }
  return i;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    if (!tokens_[i].content.empty()) by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  }
}

std::vector<TextSection> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<TextSection> sections;
  std::size_t text_start = 0;  // start of the text section in progress
  std::size_t i = 0;
  while (i < text.size()) {
    const AddedToken* found = nullptr;
    for (const std::size_t k : by_first_byte_[static_cast<unsigned char>(text[i])]) {
      if (text.substr(i, tokens_[k].content.size()) == tokens_[k].content) {
        found = &tokens_[k];
        break;
      }
    }
    if (found == nullptr) {
      ++i;
      continue;
    }
    std::string_view before = text.substr(text_start, i - text_start);
    if (found->lstrip) before.remove_suffix(trailing_space(before));
    if (!before.empty()) sections.push_back({before, -1});
    sections.push_back({text.substr(i, found->content.size()), found->id});
    i += found->content.size();
    if (found->rstrip) i += leading_space(text.substr(i));
    text_start = i;
  }
  if (text_start < text.size()) sections.push_back({text.substr(text_start), -1});
  return sections;
}

}  // namespace attngeom
