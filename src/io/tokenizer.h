#pragma once
// The checkpoint's sentencepiece tokenizer (tokenizer.model), plus token-id files.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace attngeom {

class Tokenizer {
 public:
  // Loads `model_path`; throws InputError naming the file. `model_vocab` is the
  // model's vocab_size: every piece id must fit in it.
  Tokenizer(const std::filesystem::path& model_path, int model_vocab);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // sentencepiece's own encoding of `text` (no BOS). `source` names the text in errors.
  std::vector<int> encode(const std::string& text, const std::string& source) const;
  int vocab_size() const;

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

// Byte offset of the first invalid UTF-8 sequence in `text`, or -1 if it is valid.
long first_invalid_utf8(const std::string& text);

// Reads a whole text file; throws InputError if missing, empty or not UTF-8.
// Exactly one final line ending ("\n" or "\r\n") is dropped: by POSIX convention it
// ends the last line rather than being content (and `echo text > f` adds one).
std::string read_text_file(const std::filesystem::path& path);

// Reads whitespace-separated token ids, each in [0, vocab).
std::vector<int> read_token_file(const std::filesystem::path& path, int vocab);

}  // namespace attngeom
