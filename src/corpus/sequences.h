#pragma once
// Documents -> fixed-length model inputs: BOS followed by seq_len - 1 content tokens, or
// seq_len content tokens for a tokenizer without BOS.
// Each document yields its consecutive non-overlapping windows; documents shorter
// than one window are skipped, or concatenated into a packed stream with `pack`.
// Selection is deterministic: corpus order (or a seeded shuffle), then skip, then take.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "corpus/documents.h"

namespace attngeom {

// Text -> token ids (no BOS); the second argument names the text in errors.
using EncodeFn = std::function<std::vector<int>(const std::string& text, const std::string& source)>;

struct SequenceOptions {
  int seq_len = 256;
  bool pack = false;
  int num_seqs = 16;
  int skip = 0;
  std::optional<std::uint64_t> shuffle_seed;  // unset: corpus order
  std::optional<int> bos_token_id = 1;        // none: no BOS, position 0 holds text
  bool pack_bos = true;  // packed documents after the first start with BOS (each as it was tokenized), if any
};

struct Sequence {
  std::vector<int> tokens;             // [seq_len], tokens[0] = BOS where there is one
  std::vector<std::size_t> documents;  // indices into Corpus::documents it draws from
  std::size_t first_token = 0;         // offset of the first content token in the first document (or packed stream)
};

struct SequenceSet {
  std::vector<Sequence> sequences;
  std::size_t candidates = 0;       // windows available before skip/take
  std::size_t short_documents = 0;  // skipped for being shorter than one window
};

// Throws InputError when no sequence can be made.
SequenceSet make_sequences(const Corpus& corpus, const EncodeFn& encode, const SequenceOptions& options);

}  // namespace attngeom
