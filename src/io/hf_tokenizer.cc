#include "io/hf_tokenizer.h"

#include <utility>

namespace attngeom {
namespace {

std::vector<AddedToken> tokens_where(const std::vector<AddedToken>& tokens, bool normalized) {
  std::vector<AddedToken> chosen;
  for (const AddedToken& t : tokens) {
    if (t.normalized == normalized) chosen.push_back(t);
  }
  return chosen;
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
    for (const auto& [begin, end] : step.pattern->find_all(piece)) {
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
