// Fuzz target: the corpus readers. Four header bytes pick the options, the rest is a
// corpus file as stored (plain, gzip or zstd): decompression under a size cap, splitting
// into documents (text, lines or jsonl), then windows of a byte-level "tokenizer" cut into
// sequences, whose invariants are checked.
#include <cstdint>
#include <string>

#include "corpus/decompress.h"
#include "corpus/documents.h"
#include "corpus/sequences.h"
#include "io/tokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  attngeom::CorpusOptions options;
  options.format = static_cast<attngeom::CorpusFormat>(data[0] % 3);
  options.max_document_bytes = 1 + data[1] * 16u;
  options.max_file_bytes = std::size_t{1} << 20;  // small: a compression bomb must stop early
  attngeom::SequenceOptions seq;
  seq.seq_len = 2 + data[2] % 32;
  seq.pack = (data[3] & 1) != 0;
  seq.num_seqs = 1 + (data[3] >> 1) % 8;
  seq.skip = (data[3] >> 4) % 4;
  if (data[3] & 0x80) seq.shuffle_seed = data[2];
  seq.bos_token_id = 1;

  attngeom::Corpus corpus;
  try {
    attngeom::FileContent content = attngeom::decompress_bytes(
        std::string(reinterpret_cast<const char*>(data) + 4, size - 4), options.max_file_bytes, "fuzz-corpus");
    ATTNGEOM_CHECK(content.bytes.size() <= options.max_file_bytes);
    corpus.files.push_back({"fuzz-corpus", content.compression, "", 0});
    attngeom::add_documents(content.bytes, options, 0, corpus);
  } catch (const attngeom::InputError&) {
    return 0;
  }
  ATTNGEOM_CHECK(corpus.warnings.size() <= attngeom::kMaxCorpusWarnings);
  for (const auto& doc : corpus.documents) {
    ATTNGEOM_CHECK(!doc.text.empty() && doc.text.size() <= options.max_document_bytes && doc.line >= 1);
    ATTNGEOM_CHECK(attngeom::first_invalid_utf8(doc.text) < 0);  // what reaches the tokenizer is UTF-8
  }
  // One token per byte: enough to exercise windows, packing, shuffling and skipping.
  const attngeom::EncodeFn encode = [](const std::string& text, const std::string&) {
    std::vector<int> ids;
    for (const unsigned char c : text) ids.push_back(c);
    return ids;
  };
  try {
    const attngeom::SequenceSet set = attngeom::make_sequences(corpus, encode, seq);
    ATTNGEOM_CHECK(!set.sequences.empty() && set.sequences.size() <= static_cast<std::size_t>(seq.num_seqs));
    for (const auto& s : set.sequences) {
      ATTNGEOM_CHECK(s.tokens.size() == static_cast<std::size_t>(seq.seq_len) && s.tokens[0] == seq.bos_token_id);
      for (const std::size_t d : s.documents) ATTNGEOM_CHECK(d < corpus.documents.size());
    }
  } catch (const attngeom::InputError&) {
  }
  return 0;
}
