#include "io/tokenizer.h"

#include <fstream>
#include <sstream>

#include <sentencepiece_processor.h>

#include "util/error.h"

namespace attngeom {

Tokenizer::Tokenizer(const std::filesystem::path& model_path, int model_vocab)
    : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(model_path, ec)) {
    throw InputError(model_path.string() + ": missing tokenizer (expected a sentencepiece tokenizer.model)");
  }
  const auto status = processor_->Load(model_path.string());
  if (!status.ok()) {
    throw InputError(model_path.string() + ": not a valid sentencepiece model (" + status.ToString() + ")");
  }
  if (processor_->GetPieceSize() > model_vocab) {
    throw InputError(model_path.string() + ": tokenizer has " + std::to_string(processor_->GetPieceSize()) +
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
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(path.string() + ": text file not found");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
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
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(path.string() + ": token file not found");
  std::ifstream in(path);
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
