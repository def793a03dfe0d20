#include "io/unicode_text.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <cstdlib>

#include "util/error.h"

namespace attngeom {

struct UnicodeRegex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

// An Oniguruma pattern (Rust tokenizers' regex) as PCRE2 reads it: \s and \S as Unicode's
// White_Space property, which Oniguruma and transformers.js use (PCRE2's own \s also takes
// U+180E), and a class nested in a class flattened into it, since PCRE2 reads a '[' inside a
// class as a literal and its first ']' as the end ("[^(\s|[.,!?])]" in BLOOM's tokenizer, the
// union [^(\s|.,!?)]). A nested negated class or an intersection (&&) has no flat form and is
// refused. Escaped pairs, \Q...\E quotes and POSIX classes ([:alpha:]) are copied as they are.
std::string as_pcre2(const std::string& pattern, const std::string& source) {
  std::string out;
  int depth = 0;             // classes open at this point
  std::size_t class_at = 0;  // where the innermost class's members begin
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 's') {
        out += "\\p{White_Space}";
      } else if (next == 'S') {
        out += "\\P{White_Space}";
      } else if (next == 'Q') {
        const std::size_t end = pattern.find("\\E", i + 1);
        const std::size_t stop = end == std::string::npos ? pattern.size() : end + 2;
        out.append(pattern, i - 1, stop - (i - 1));
        i = stop - 1;
      } else {
        out += '\\';
        out += next;
      }
      continue;
    }
    const bool first_member = depth > 0 && i == class_at;  // a ']' here is a literal member
    if (c == '[' && depth > 0 && pattern.compare(i, 2, "[:") == 0) {
      const std::size_t end = pattern.find(":]", i + 2);
      if (end != std::string::npos) {
        out.append(pattern, i, end + 2 - i);
        i = end + 1;
        continue;
      }
    }
    if (c == '[') {
      const bool negated = i + 1 < pattern.size() && pattern[i + 1] == '^';
      if (depth > 0 && negated)
        throw InputError(source + " has a negated class inside a class, which attngeom cannot read");
      if (depth == 0) out += negated ? "[^" : "[";
      ++depth;
      if (negated) ++i;
      class_at = i + 1;
    } else if (c == ']' && depth > 0 && !first_member) {
      if (--depth == 0) out += ']';
    } else {
      if (depth > 0 && c == '&' && pattern.compare(i, 2, "&&") == 0) {
        throw InputError(source + " has a class intersection (&&), which attngeom cannot read");
      }
      out += c;
    }
  }
  return out;
}

}  // namespace

UnicodeRegex::UnicodeRegex(const std::string& pattern, const std::string& source, bool literal)
    : compiled_(std::make_unique<Compiled>()) {
  const std::string source_pattern = literal ? pattern : as_pcre2(pattern, source);
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source_pattern.data()), source_pattern.size(),
                                  PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0u), &error, &offset, nullptr);
  if (compiled_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw InputError(source + " does not compile (" + reinterpret_cast<const char*>(message) + ")");
  }
  // The JIT is an optimisation only: where it is unavailable the interpreter matches the same.
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

UnicodeRegex::~UnicodeRegex() = default;
UnicodeRegex::UnicodeRegex(UnicodeRegex&&) noexcept = default;
UnicodeRegex& UnicodeRegex::operator=(UnicodeRegex&&) noexcept = default;

std::vector<std::pair<std::size_t, std::size_t>> UnicodeRegex::find_all(std::string_view text) const {
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(compiled_->code, nullptr), &pcre2_match_data_free);
  ATTNGEOM_CHECK(data != nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t start = 0;
  while (start <= text.size()) {
    // The text was checked as UTF-8 once, on input: no need to check it on every match.
    const int rc = pcre2_match(compiled_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw InputError(std::string("tokenizer regex failed (") + reinterpret_cast<const char*>(message) + ")");
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    const std::size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      matches.emplace_back(begin, end);
      start = end;
    } else {
      if (begin >= text.size()) break;
      std::size_t length = 0;
      decode_utf8(text, begin, &length);
      start = begin + length;
    }
  }
  return matches;
}

std::string normalize_unicode(std::string_view text, NormalForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                   &out, static_cast<utf8proc_option_t>(options));
  if (n < 0) throw InputError(std::string("unicode normalisation failed (") + utf8proc_errmsg(n) + ")");
  std::string result(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
  std::free(out);
  return result;
}

bool is_unicode_space(char32_t c) {
  if ((c >= 0x09 && c <= 0x0d) || c == 0x85) return true;
  const utf8proc_category_t category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category == UTF8PROC_CATEGORY_ZS || category == UTF8PROC_CATEGORY_ZL || category == UTF8PROC_CATEGORY_ZP;
}

char32_t decode_utf8(std::string_view text, std::size_t i, std::size_t* length) {
  const auto c = static_cast<unsigned char>(text[i]);
  std::size_t n = 1;
  char32_t cp = c;
  if (c >= 0xf0) {
    n = 4, cp = c & 0x07;
  } else if (c >= 0xe0) {
    n = 3, cp = c & 0x0f;
  } else if (c >= 0xc0) {
    n = 2, cp = c & 0x1f;
  }
  for (std::size_t k = 1; k < n && i + k < text.size(); ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3f);
  *length = n;
  return n == 1 ? static_cast<char32_t>(c) : cp;
}

}  // namespace attngeom
