#pragma once
// Unicode services for Hugging Face tokenizers, from Debian's libraries rather than tables
// of our own: PCRE2 (UTF + UCP mode, so \p{L}, \p{N}, \s and (?i:...) follow the Unicode
// character database) for the pre-tokenizer regexes, utf8proc for normalisation forms.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attngeom {

// A compiled Unicode regular expression (or, with `literal`, a plain string to find).
// \s and \S mean Unicode's White_Space, as in Oniguruma. Throws InputError "<source> does
// not compile (<why>)".
class UnicodeRegex {
 public:
  UnicodeRegex(const std::string& pattern, const std::string& source, bool literal = false);
  ~UnicodeRegex();
  UnicodeRegex(UnicodeRegex&&) noexcept;
  UnicodeRegex& operator=(UnicodeRegex&&) noexcept;

  // Every non-overlapping leftmost match in `text` (valid UTF-8), as byte ranges
  // [begin, end), scanning left to right; an empty match advances one character and is
  // not reported.
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

// `text` (valid UTF-8) in normal form `form`.
std::string normalize_unicode(std::string_view text, NormalForm form);

// Whether the code point is White_Space as Rust's char::is_whitespace sees it (general
// categories Zs, Zl, Zp, and the controls \t..\r and U+0085).
bool is_unicode_space(char32_t c);

// The code point starting at byte `i` of valid UTF-8 `text`, and its length in bytes.
char32_t decode_utf8(std::string_view text, std::size_t i, std::size_t* length);

}  // namespace attngeom
