// Fuzz target: the tokenizer path. The first byte picks the mode:
//   even: the rest is text. Our UTF-8 validator (io/tokenizer.h) must agree with an
//         independent one written from the Unicode table of well-formed byte sequences;
//         valid text is then encoded whole and in pieces, every id inside the vocabulary.
//   odd:  the rest is a serialized tokenizer.model, loaded as attngeom loads one; a model
//         that loads must encode a sample text into ids inside its own vocabulary.
#include <climits>
#include <cstdint>
#include <memory>
#include <string>

#include "io/tokenizer.h"
#include "util/error.h"

#ifndef ATTNGEOM_FUZZ_TOKENIZER_MODEL
#error "ATTNGEOM_FUZZ_TOKENIZER_MODEL must name the fixed tokenizer.model"
#endif

namespace {

// Unicode 15, table 3-7: each well-formed sequence by the allowed range of every byte.
long reference_first_invalid(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  const auto in = [](unsigned char b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
  std::size_t i = 0;
  while (i < n) {
    const unsigned char b = s[i];
    std::size_t len = 0;
    unsigned lo2 = 0x80, hi2 = 0xbf;
    if (b <= 0x7f)
      len = 1;
    else if (in(b, 0xc2, 0xdf))
      len = 2;
    else if (b == 0xe0)
      len = 3, lo2 = 0xa0;
    else if (in(b, 0xe1, 0xec) || in(b, 0xee, 0xef))
      len = 3;
    else if (b == 0xed)
      len = 3, hi2 = 0x9f;
    else if (b == 0xf0)
      len = 4, lo2 = 0x90;
    else if (in(b, 0xf1, 0xf3))
      len = 4;
    else if (b == 0xf4)
      len = 4, hi2 = 0x8f;
    else
      return static_cast<long>(i);
    if (i + len > n) return static_cast<long>(i);
    if (len >= 2 && !in(s[i + 1], lo2, hi2)) return static_cast<long>(i);
    for (std::size_t k = 2; k < len; ++k) {
      if (!in(s[i + k], 0x80, 0xbf)) return static_cast<long>(i);
    }
    i += len;
  }
  return -1;
}

const attngeom::Tokenizer& fixed_tokenizer() {
  static const attngeom::Tokenizer tokenizer(ATTNGEOM_FUZZ_TOKENIZER_MODEL, INT_MAX);
  return tokenizer;
}

void check_ids(const std::vector<int>& ids, int vocab) {
  for (const int id : ids) ATTNGEOM_CHECK(id >= 0 && id < vocab);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string payload(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) {
    const long ours = attngeom::first_invalid_utf8(payload);
    ATTNGEOM_CHECK(ours == reference_first_invalid(payload));
    if (ours >= 0) return 0;
    const attngeom::Tokenizer& tokenizer = fixed_tokenizer();
    try {
      check_ids(tokenizer.encode(payload, "fuzz text"), tokenizer.vocab_size());
      // Small pieces, so the cutting logic runs on fuzz-sized inputs.
      const std::size_t piece = 1 + data[0] / 2;
      check_ids(tokenizer.encode_document(payload, "fuzz text", piece), tokenizer.vocab_size());
    } catch (const attngeom::InputError&) {
    }
    return 0;
  }
  try {
    const attngeom::Tokenizer tokenizer =
        attngeom::Tokenizer::from_serialized(payload, INT_MAX, "fuzz tokenizer.model");
    check_ids(tokenizer.encode("Hello, world: 12 naïve cafés \xe2\x80\x94 done.\n", "sample"), tokenizer.vocab_size());
  } catch (const attngeom::InputError&) {
  }
  return 0;
}
