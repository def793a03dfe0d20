#include "io/tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <sstream>

#include "io/hf_tokenizer.h"
#include "util/error.h"
#include "util/file_read.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;

class SentencePieceBackend final : public TokenizerBackend {
 public:
  SentencePieceBackend(const std::string& model_bytes, int model_vocab, const std::string& source) {
    const auto status = processor_.LoadFromSerializedProto(model_bytes);
    if (!status.ok()) throw InputError(source + ": not a valid sentencepiece model (" + status.ToString() + ")");
    if (processor_.GetPieceSize() > model_vocab) {
      throw InputError(source + ": tokenizer has " + std::to_string(processor_.GetPieceSize()) +
                       " pieces, more than the model's vocab_size " + std::to_string(model_vocab));
    }
  }
  std::vector<int> encode(const std::string& text, const std::string& source) const override {
    std::vector<int> ids;
    const auto status = processor_.Encode(text, &ids);
    if (!status.ok()) throw InputError(source + ": tokenizer failed (" + status.ToString() + ")");
    return ids;
  }
  int vocab_size() const override { return processor_.GetPieceSize(); }
  std::optional<int> own_bos_id() const {
    const int id = processor_.bos_id();
    return id >= 0 ? std::optional<int>(id) : std::nullopt;
  }

 private:
  sentencepiece::SentencePieceProcessor processor_;
};

class HfBackend final : public TokenizerBackend {
 public:
  explicit HfBackend(HfTokenizerSpec spec) : tokenizer_(std::move(spec)) {}
  std::vector<int> encode(const std::string& text, const std::string& source) const override {
    try {
      return tokenizer_.encode(text);
    } catch (const InputError& e) {
      throw InputError(source + ": " + e.what());
    }
  }
  int vocab_size() const override { return tokenizer_.vocab_size(); }
  std::optional<int> bos_id() const { return tokenizer_.bos_id(); }

 private:
  HfTokenizer tokenizer_;
};

std::string read_sentencepiece(const fs::path& model_path) {
  std::error_code ec;
  if (!fs::exists(model_path, ec) && !ec) {
    throw InputError(model_path.string() +
                     ": missing tokenizer (expected a sentencepiece tokenizer.model, or a Hugging Face "
                     "tokenizer.json, or GPT-2's vocab.json and merges.txt beside it)");
  }
  return read_file_bytes(model_path, kMaxTokenizerBytes, "tokenizer (a sentencepiece tokenizer.model)");
}

// Which of a checkpoint's tokenizer files is read, in this order of preference: a
// sentencepiece tokenizer.model, a tokenizer.json, or GPT-2's vocab.json and merges.txt.
enum class TokenizerFiles { kSentencePiece, kTokenizerJson, kVocabMerges };
TokenizerFiles tokenizer_files(const fs::path& model_dir) {
  std::error_code ec;
  const auto has = [&](const char* name) { return fs::exists(model_dir / name, ec) && !ec; };
  if (has("tokenizer.model") || (!has("tokenizer.json") && !(has("vocab.json") && has("merges.txt")))) {
    return TokenizerFiles::kSentencePiece;  // the message of a missing one names every form
  }
  return has("tokenizer.json") ? TokenizerFiles::kTokenizerJson : TokenizerFiles::kVocabMerges;
}

// The byte-level BPE tokenizer of a checkpoint without a tokenizer.model, and its file.
std::pair<HfTokenizerSpec, fs::path> read_byte_level(const fs::path& model_dir, int model_vocab) {
  if (tokenizer_files(model_dir) == TokenizerFiles::kTokenizerJson) {
    return {read_hf_tokenizer(model_dir / "tokenizer.json", model_vocab), model_dir / "tokenizer.json"};
  }
  return {read_gpt2_vocab_merges(model_dir, model_vocab), model_dir / "vocab.json"};
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<TokenizerBackend> backend, std::optional<int> bos_id, fs::path file)
    : backend_(std::move(backend)), bos_id_(bos_id), file_(std::move(file)) {}

Tokenizer::Tokenizer(const fs::path& model_path, int model_vocab) {
  auto backend =
      std::make_unique<SentencePieceBackend>(read_sentencepiece(model_path), model_vocab, model_path.string());
  bos_id_ = backend->own_bos_id();
  backend_ = std::move(backend);
  file_ = model_path;
}

Tokenizer Tokenizer::from_serialized(const std::string& model_bytes, int model_vocab, const std::string& source) {
  auto backend = std::make_unique<SentencePieceBackend>(model_bytes, model_vocab, source);
  const std::optional<int> bos = backend->own_bos_id();
  return Tokenizer(std::move(backend), bos, {});
}

Tokenizer Tokenizer::for_model(const fs::path& model_dir, int model_vocab, int config_bos_token_id) {
  if (tokenizer_files(model_dir) != TokenizerFiles::kSentencePiece) {
    auto [spec, path] = read_byte_level(model_dir, model_vocab);
    auto backend = std::make_unique<HfBackend>(std::move(spec));
    const std::optional<int> bos = backend->bos_id();
    return Tokenizer(std::move(backend), bos, path);
  }
  Tokenizer tokenizer(model_dir / "tokenizer.model", model_vocab);
  tokenizer.bos_id_ = config_bos_token_id;
  return tokenizer;
}

std::optional<int> checkpoint_bos_id(const fs::path& model_dir, int model_vocab, int config_bos_token_id) {
  if (tokenizer_files(model_dir) == TokenizerFiles::kSentencePiece) return config_bos_token_id;
  return read_byte_level(model_dir, model_vocab).first.bos_id;
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

int Tokenizer::vocab_size() const { return backend_->vocab_size(); }

std::vector<int> Tokenizer::encode(const std::string& text, const std::string& source) const {
  return backend_->encode(text, source);
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Where the piece [start, end) of `text` ends: just before a single space between two
// non-space characters within the piece's final 64 KiB (`*at_space` = true), else before a
// UTF-8 lead byte (never inside a character).
std::size_t piece_end(const std::string& text, std::size_t start, std::size_t end, bool* at_space) {
  *at_space = false;
  if (end >= text.size()) return text.size();
  const std::size_t floor = end - std::min<std::size_t>(end - start - 1, 1 << 16);
  for (std::size_t cut = end; cut > floor; --cut) {
    if (text[cut] == ' ' && !is_space(text[cut - 1]) && cut + 1 < text.size() && !is_space(text[cut + 1])) {
      *at_space = true;
      return cut;
    }
  }
  const auto continuation = [&](std::size_t i) { return (static_cast<unsigned char>(text[i]) & 0xc0) == 0x80; };
  std::size_t cut = end;
  while (cut > start && continuation(cut)) --cut;
  if (cut == start) {  // a piece shorter than one character: extend it to the next one
    cut = end;
    while (cut < text.size() && continuation(cut)) ++cut;
  }
  return cut;
}

}  // namespace

std::vector<int> Tokenizer::encode_document(const std::string& text, const std::string& source,
                                            std::size_t piece_bytes) const {
  ATTNGEOM_CHECK(piece_bytes >= 1);
  if (text.size() <= piece_bytes) return encode(text, source);
  // A piece that starts at a space is encoded after an anchor word, whose ids are then
  // dropped: sentencepiece splits at whitespace, so the space's word gets the ids it has in
  // the whole text, whatever the tokenizer does with a leading space (dummy prefix, or not).
  const std::vector<int> anchor = encode("a", source);
  std::vector<int> ids;
  std::size_t start = 0;
  bool after_space = false;
  while (start < text.size()) {
    bool at_space = false;
    const std::size_t end = piece_end(text, start, std::min(text.size(), start + piece_bytes), &at_space);
    const std::string piece = text.substr(start, end - start);
    const std::vector<int> piece_ids = after_space ? encode("a" + piece, source) : encode(piece, source);
    const std::size_t skip = after_space ? anchor.size() : 0;
    // A tokenizer.json's own regex or added tokens may join the anchor to the piece.
    if (piece_ids.size() < skip ||
        !std::equal(anchor.begin(), anchor.begin() + static_cast<long>(skip), piece_ids.begin())) {
      throw InputError(source + ": the tokenizer does not cut this text at a space between words, so a document over " +
                       std::to_string(piece_bytes) + " bytes cannot be encoded in pieces");
    }
    ids.insert(ids.end(), piece_ids.begin() + static_cast<long>(skip), piece_ids.end());
    start = end;
    after_space = at_space;
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

std::string text_file_content(std::string bytes) {
  std::size_t out = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (!(bytes[i] == '\r' && i + 1 < bytes.size() && bytes[i + 1] == '\n')) bytes[out++] = bytes[i];
  }
  bytes.resize(out);
  if (!bytes.empty() && bytes.back() == '\n') bytes.pop_back();
  return bytes;
}

std::string read_text_file(const std::filesystem::path& path) {
  const std::string text = text_file_content(read_file_bytes(path, kMaxTextFileBytes, "text file"));
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
