#pragma once
// The checkpoint's sentencepiece tokenizer (tokenizer.model), plus token-id files.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace attngeom {

// Largest tokenizer.model we read (real ones are well below 10 MiB).
inline constexpr std::size_t kMaxTokenizerBytes = std::size_t{256} << 20;

class Tokenizer {
 public:
  // Loads `model_path`; throws InputError naming the file. `model_vocab` is the
  // model's vocab_size: every piece id must fit in it.
  Tokenizer(const std::filesystem::path& model_path, int model_vocab);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // The same from the bytes of a tokenizer.model already in memory.
  static Tokenizer from_serialized(const std::string& model_bytes, int model_vocab, const std::string& source);

  // sentencepiece's own encoding of `text` (no BOS). `source` names the text in errors.
  std::vector<int> encode(const std::string& text, const std::string& source) const;

  // For corpus documents of any length: text longer than kEncodePieceBytes is encoded in
  // pieces, which bounds the tokenizer's memory (sentencepiece takes ~150 bytes per input
  // byte) and keeps its time linear. Pieces are cut just before a single space between
  // words and then give exactly the whole-text ids; a piece without one in its last 64 KiB
  // is cut at a character boundary, where the tokens next to the cut may differ.
  static constexpr std::size_t kEncodePieceBytes = std::size_t{1} << 20;
  std::vector<int> encode_document(const std::string& text, const std::string& source,
                                   std::size_t piece_bytes = kEncodePieceBytes) const;
  int vocab_size() const;

 private:
  Tokenizer();
  void check_loaded(const std::string& source, int model_vocab) const;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

// Byte offset of the first invalid UTF-8 sequence in `text`, or -1 if it is valid.
long first_invalid_utf8(const std::string& text);

// Largest --text file read whole (capture, perplexity): sentencepiece encodes it at once.
inline constexpr std::size_t kMaxTextFileBytes = std::size_t{16} << 20;

// A text file's bytes as one document: "\r\n" becomes "\n" (as Python's text mode reads
// it, and as the lines/jsonl formats strip it), and exactly one final line ending is
// dropped: by POSIX convention it ends the last line rather than being content (and
// `echo text > f` adds one). perplexity, capture and the corpus `text` format share it.
std::string text_file_content(std::string bytes);

// Reads a whole text file (text_file_content); throws InputError if missing, empty, too
// large or not UTF-8.
std::string read_text_file(const std::filesystem::path& path);

// Reads whitespace-separated token ids, each in [0, vocab).
std::vector<int> read_token_file(const std::filesystem::path& path, int vocab);

}  // namespace attngeom
