#pragma once
// Query-row selection: "last", "all", "stride:K" (the last position and every K-th
// before it, down to 1), or a comma-separated list of positions.
#include <string>
#include <vector>

namespace attngeom {

struct QuerySelection {
  enum class Kind { kLast, kAll, kStride, kList } kind = Kind::kLast;
  std::vector<int> positions;  // for kList, as given
  int stride = 0;              // for kStride
  std::string text;            // the flag as written, for provenance
};

// Throws InputError naming `flag` on malformed input.
QuerySelection parse_query_selection(const std::string& text, const std::string& flag);

// Ascending, de-duplicated positions for a sequence of length `seq`; throws InputError
// naming `flag` when a listed position is outside [0, seq).
std::vector<int> resolve_query_rows(const QuerySelection& selection, int seq, const std::string& flag);

}  // namespace attngeom
