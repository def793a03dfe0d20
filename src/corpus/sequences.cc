#include "corpus/sequences.h"

#include <random>

#include "util/error.h"
#include "util/plural.h"

namespace attngeom {
namespace {

struct Window {
  std::vector<std::size_t> documents;
  std::size_t stream = 0;  // which token stream (document or packed stream)
  std::size_t offset = 0;
};

// Fisher-Yates with an explicit uniform draw, so the order is the same on every platform.
void seeded_shuffle(std::vector<Window>& windows, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (std::size_t i = windows.size(); i > 1; --i) {
    const std::uint64_t bound = i;
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    std::uint64_t draw;
    do {
      draw = rng();
    } while (draw >= limit);
    std::swap(windows[i - 1], windows[static_cast<std::size_t>(draw % bound)]);
  }
}

}  // namespace

SequenceSet make_sequences(const Corpus& corpus, const EncodeFn& encode, const SequenceOptions& o) {
  ATTNGEOM_CHECK(o.seq_len >= 2 && o.num_seqs >= 1 && o.skip >= 0);
  const auto content = static_cast<std::size_t>(o.bos_token_id ? o.seq_len - 1 : o.seq_len);
  SequenceSet result;

  // Token streams: one per usable document, or one packed stream.
  std::vector<std::vector<int>> streams;
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> stream_docs;  // (doc, start offset in stream)
  if (o.pack) {
    streams.emplace_back();
    stream_docs.emplace_back();
  }
  for (std::size_t d = 0; d < corpus.documents.size(); ++d) {
    const Document& doc = corpus.documents[d];
    const std::string where = corpus.files[doc.file].path.string() + ":" + std::to_string(doc.line);
    std::vector<int> ids = encode(doc.text, where);
    if (o.pack) {
      // A document boundary the model can see, as Hugging Face packs BOS-prefixed documents:
      // the BOS is the document's first token.
      stream_docs[0].push_back({d, streams[0].size()});
      if (o.pack_bos && o.bos_token_id && !streams[0].empty()) streams[0].push_back(*o.bos_token_id);
      streams[0].insert(streams[0].end(), ids.begin(), ids.end());
    } else if (ids.size() < content) {
      ++result.short_documents;
    } else {
      streams.push_back(std::move(ids));
      stream_docs.push_back({{d, 0}});
    }
  }

  std::vector<Window> windows;
  for (std::size_t s = 0; s < streams.size(); ++s) {
    const auto& docs = stream_docs[s];  // (document, start offset), ascending offsets
    const auto doc_end = [&](std::size_t i) { return i + 1 < docs.size() ? docs[i + 1].second : streams[s].size(); };
    std::size_t first = 0;  // first document that ends after the window's start
    for (std::size_t offset = 0; offset + content <= streams[s].size(); offset += content) {
      while (first < docs.size() && doc_end(first) <= offset) ++first;
      Window w{{}, s, offset};
      for (std::size_t i = first; i < docs.size() && docs[i].second < offset + content; ++i) {
        if (doc_end(i) > docs[i].second) w.documents.push_back(docs[i].first);  // skip empty documents
      }
      windows.push_back(std::move(w));
    }
  }
  result.candidates = windows.size();
  if (o.shuffle_seed) seeded_shuffle(windows, *o.shuffle_seed);

  for (std::size_t i = static_cast<std::size_t>(o.skip);
       i < windows.size() && result.sequences.size() < static_cast<std::size_t>(o.num_seqs); ++i) {
    const Window& w = windows[i];
    Sequence seq;
    seq.tokens.reserve(static_cast<std::size_t>(o.seq_len));
    if (o.bos_token_id) seq.tokens.push_back(*o.bos_token_id);
    const auto& stream = streams[w.stream];
    seq.tokens.insert(seq.tokens.end(), stream.begin() + static_cast<long>(w.offset),
                      stream.begin() + static_cast<long>(w.offset + content));
    seq.documents = w.documents;
    seq.first_token = w.offset;
    result.sequences.push_back(std::move(seq));
  }
  if (result.sequences.empty()) {
    SettingMessage message{
        "corpus: no sequence of " + std::to_string(o.seq_len) + " tokens available (" +
            count_of(result.candidates, "window") + ", ",
        setting("skip"),
        " " + std::to_string(o.skip) + ", " + count_of(result.short_documents, "document") + " too short; try "};
    if (!o.pack) message += {setting("pack"), " or "};
    throw SettingError(message +
                       SettingMessage{"a smaller ", setting("seq_len"), " or ", setting("skip"), ", or more text)"});
  }
  return result;
}

}  // namespace attngeom
