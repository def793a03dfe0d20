#pragma once
// The checkpoint's tokenizer: sentencepiece (tokenizer.model) or a Hugging Face byte-level
// BPE tokenizer.json (hf_tokenizer.h), behind one interface; plus token-id files.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attngeom {

// Largest tokenizer.model or tokenizer.json we read (real ones are well below 64 MiB).
inline constexpr std::size_t kMaxTokenizerBytes = std::size_t{256} << 20;

// The encoder behind a Tokenizer (tokenizer.cc has the two kinds).
class TokenizerBackend {
 public:
  virtual ~TokenizerBackend() = default;
  virtual std::vector<int> encode(const std::string& text, const std::string& source) const = 0;
  virtual int vocab_size() const = 0;
};

class Tokenizer {
 public:
  // The checkpoint's tokenizer: model_dir/tokenizer.model (sentencepiece) when there is
  // one, else model_dir/tokenizer.json. A sentencepiece tokenizer's BOS is config.json's
  // `config_bos_token_id`; a tokenizer.json's is what its post-processor and
  // tokenizer_config.json say, or none (Qwen). Throws InputError naming the file.
  static Tokenizer for_model(const std::filesystem::path& model_dir, int model_vocab, int config_bos_token_id);

  // Loads the sentencepiece `model_path` (its BOS: the model's own bos_id); throws
  // InputError naming the file. `model_vocab` is the model's vocab_size: every piece id
  // must fit in it.
  Tokenizer(const std::filesystem::path& model_path, int model_vocab);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // The same from the bytes of a tokenizer.model already in memory.
  static Tokenizer from_serialized(const std::string& model_bytes, int model_vocab, const std::string& source);

  // The tokenizer's own encoding of `text` (no BOS; a tokenizer.json's added tokens are
  // recognised in the text). `source` names the text in errors.
  std::vector<int> encode(const std::string& text, const std::string& source) const;

  // For corpus documents of any length: text longer than kEncodePieceBytes is encoded in
  // pieces, which bounds the tokenizer's memory (sentencepiece takes ~150 bytes per input
  // byte) and keeps its time linear. Pieces are cut just before a single space between
  // words and then give exactly the whole-text ids (for a tokenizer.json, where its regex
  // starts a piece at such a space, as LLaMA-3's, Qwen2's and GPT-2's do; else InputError);
  // a piece without one in its last 64 KiB is cut at a character boundary, where the
  // tokens next to the cut may differ.
  static constexpr std::size_t kEncodePieceBytes = std::size_t{1} << 20;
  std::vector<int> encode_document(const std::string& text, const std::string& source,
                                   std::size_t piece_bytes = kEncodePieceBytes) const;
  int vocab_size() const;

  // The id put before every text (position 0 of a sequence), or none: then position 0
  // holds the text's first token.
  std::optional<int> bos_id() const { return bos_id_; }
  // The file it was read from (empty for from_serialized).
  const std::filesystem::path& file() const { return file_; }

 private:
  Tokenizer(std::unique_ptr<TokenizerBackend> backend, std::optional<int> bos_id, std::filesystem::path file);
  std::unique_ptr<TokenizerBackend> backend_;
  std::optional<int> bos_id_;
  std::filesystem::path file_;
};

// The BOS id sequences of this checkpoint start with when no text is tokenized (token-id
// files): a tokenizer.json's (read only when it is the checkpoint's tokenizer), else
// config.json's `config_bos_token_id`.
std::optional<int> checkpoint_bos_id(const std::filesystem::path& model_dir, int model_vocab, int config_bos_token_id);

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
