#include "io/tokenizer.h"

#include <algorithm>
#include <sstream>

#include <sentencepiece_processor.h>

#include "util/error.h"
#include "util/file_read.h"

namespace attngeom {

Tokenizer::Tokenizer() : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}

Tokenizer::Tokenizer(const std::filesystem::path& model_path, int model_vocab) : Tokenizer() {
  std::error_code ec;
  if (!std::filesystem::exists(model_path, ec) && !ec) {
    throw InputError(model_path.string() + ": missing tokenizer (expected a sentencepiece tokenizer.model)");
  }
  const std::string bytes = read_file_bytes(model_path, kMaxTokenizerBytes, "tokenizer (a sentencepiece tokenizer.model)");
  const auto status = processor_->LoadFromSerializedProto(bytes);
  if (!status.ok()) {
    throw InputError(model_path.string() + ": not a valid sentencepiece model (" + status.ToString() + ")");
  }
  check_loaded(model_path.string(), model_vocab);
}

Tokenizer Tokenizer::from_serialized(const std::string& model_bytes, int model_vocab, const std::string& source) {
  Tokenizer tokenizer;
  const auto status = tokenizer.processor_->LoadFromSerializedProto(model_bytes);
  if (!status.ok()) throw InputError(source + ": not a valid sentencepiece model (" + status.ToString() + ")");
  tokenizer.check_loaded(source, model_vocab);
  return tokenizer;
}

void Tokenizer::check_loaded(const std::string& source, int model_vocab) const {
  if (processor_->GetPieceSize() > model_vocab) {
    throw InputError(source + ": tokenizer has " + std::to_string(processor_->GetPieceSize()) +
                     " pieces, more than the model's vocab_size " + std::to_string(model_vocab));
  }
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

int Tokenizer::vocab_size() const { return processor_->GetPieceSize(); }

std::vector<int> Tokenizer::encode(const std::string& text, const std::string& source) const {
  std::vector<int> ids;
  const auto status = processor_->Encode(text, &ids);
  if (!status.ok()) throw InputError(source + ": tokenizer failed (" + status.ToString() + ")");
  return ids;
}

std::vector<int> Tokenizer::encode_document(const std::string& text, const std::string& source,
                                            std::size_t piece_bytes) const {
  ATTNGEOM_CHECK(piece_bytes >= 1);
  if (text.size() <= piece_bytes) return encode(text, source);
  std::vector<int> ids;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = std::min(text.size(), start + piece_bytes);
    if (end < text.size()) {
      // Cut just before the last whitespace of the piece's final 64 KiB, else before a
      // UTF-8 lead byte (never inside a character).
      std::size_t cut = end;
      const std::size_t floor = end - std::min<std::size_t>(end - start - 1, 1 << 16);
      while (cut > floor && text[cut] != ' ' && text[cut] != '\n' && text[cut] != '\t') --cut;
      if (cut == floor) {
        const auto continuation = [&](std::size_t i) { return (static_cast<unsigned char>(text[i]) & 0xc0) == 0x80; };
        cut = end;
        while (cut > start && continuation(cut)) --cut;
        if (cut == start) {  // a piece shorter than one character: extend it to the next one
          cut = end;
          while (cut < text.size() && continuation(cut)) ++cut;
        }
      }
      end = cut;
    }
    const std::vector<int> piece = encode(text.substr(start, end - start), source);
    ids.insert(ids.end(), piece.begin(), piece.end());
    start = end;
  }
  return ids;
}

long first_invalid_utf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    std::size_t len;
    std::uint32_t min_cp;
    std::uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2, min_cp = 0x80, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3, min_cp = 0x800, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4, min_cp = 0x10000, cp = c & 0x07;
    } else {
      return static_cast<long>(i);
    }
    if (i + len > n) return static_cast<long>(i);
    for (std::size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) return static_cast<long>(i);
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    // Reject overlong forms, UTF-16 surrogates and code points past U+10FFFF.
    if (cp < min_cp || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return static_cast<long>(i);
    i += len;
  }
  return -1;
}

std::string read_text_file(const std::filesystem::path& path) {
  std::string text = read_file_bytes(path, kMaxTextFileBytes, "text file");
  if (!text.empty() && text.back() == '\n') {
    text.pop_back();
    if (!text.empty() && text.back() == '\r') text.pop_back();
  }
  if (text.empty()) throw InputError(path.string() + ": empty text file");
  if (const long bad = first_invalid_utf8(text); bad >= 0) {
    throw InputError(path.string() + ": invalid UTF-8 at byte " + std::to_string(bad));
  }
  return text;
}

std::vector<int> read_token_file(const std::filesystem::path& path, int vocab) {
  std::istringstream in(read_file_bytes(path, kMaxTextFileBytes, "token file"));
  std::vector<int> ids;
  std::string word;
  while (in >> word) {
    std::size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || id < 0 || id >= vocab) {
      throw InputError(path.string() + ": token '" + word + "' at index " + std::to_string(ids.size()) +
                       " is not an integer id in [0, " + std::to_string(vocab) + ")");
    }
    ids.push_back(static_cast<int>(id));
  }
  if (ids.empty()) throw InputError(path.string() + ": no token ids");
  return ids;
}

}  // namespace attngeom
