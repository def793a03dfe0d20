#include "io/hf_tokenizer.h"

#include <utility>

#include "io/byte_level_bpe.h"

namespace attngeom {
namespace {

std::vector<AddedToken> tokens_where(const std::vector<AddedToken>& tokens, bool normalized) {
  std::vector<AddedToken> chosen;
  for (const AddedToken& t : tokens) {
    if (t.normalized == normalized) chosen.push_back(t);
  }
  return chosen;
}

// The byte ranges of `piece` where `step`'s pattern matches: in the piece itself, or in its
// byte-level spelling, whose k-th code point is the piece's k-th byte.
std::vector<std::pair<std::size_t, std::size_t>> matches(const PreTokenizerStep& step, const std::string& piece) {
  if (!step.on_byte_level) return step.pattern->find_all(piece);
  const std::string spelled = byte_level_string(piece);
  std::vector<std::size_t> byte_of(spelled.size() + 1, piece.size());  // at each code point's start
  for (std::size_t i = 0, k = 0; i < spelled.size(); ++i) {
    if ((static_cast<unsigned char>(spelled[i]) & 0xC0) != 0x80) byte_of[i] = k++;
  }
  auto found = step.pattern->find_all(spelled);
  for (auto& [begin, end] : found) begin = byte_of[begin], end = byte_of[end];
  return found;
}

// One pre-tokenizer step over every piece (byte ranges of the same text).
std::vector<std::string> apply_step(const PreTokenizerStep& step, std::vector<std::string> pieces) {
  std::vector<std::string> out;
  for (std::string& piece : pieces) {
    if (step.add_prefix_space && (piece.empty() || piece[0] != ' ')) piece.insert(0, 1, ' ');
    if (!step.pattern) {
      out.push_back(std::move(piece));
      continue;
    }
    std::size_t last = 0;
    for (const auto& [begin, end] : matches(step, piece)) {
      if (begin > last) out.push_back(piece.substr(last, begin - last));
      if (step.keep_matches) out.push_back(piece.substr(begin, end - begin));
      last = end;
    }
    if (last < piece.size()) out.push_back(piece.substr(last));
  }
  return out;
}

}  // namespace

HfTokenizer::HfTokenizer(HfTokenizerSpec spec)
    : spec_(std::move(spec)),
      raw_tokens_(tokens_where(spec_.added_tokens, false)),
      normalized_tokens_(tokens_where(spec_.added_tokens, true)) {}

std::vector<int> HfTokenizer::encode(const std::string& text) const {
  std::vector<int> ids;
  for (const TextSection& section : raw_tokens_.split(text)) {
    if (section.token >= 0) {
      ids.push_back(section.token);
      continue;
    }
    std::string normalized(section.text);
    for (const NormalForm form : spec_.normalizer) normalized = normalize_unicode(normalized, form);
    encode_normalized(normalized, ids);
  }
  return ids;
}

void HfTokenizer::encode_normalized(const std::string& text, std::vector<int>& ids) const {
  for (const TextSection& section : normalized_tokens_.split(text)) {
    if (section.token >= 0) {
      ids.push_back(section.token);
      continue;
    }
    std::vector<std::string> pieces{std::string(section.text)};
    for (const PreTokenizerStep& step : spec_.pre_tokenizer) pieces = apply_step(step, std::move(pieces));
    for (const std::string& piece : pieces) spec_.model->encode(piece, ids);
  }
}

}  // namespace attngeom
