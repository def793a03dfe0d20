#pragma once
// Query-row selection: "last", "all", "stride:K" (the last position and every K-th
// before it, down to 1), or a comma-separated list of positions.
#include <string>
#include <vector>

namespace attngeom {

struct QuerySelection {
  enum class Kind { kLast, kAll, kStride, kList } kind = Kind::kLast;
  std::vector<int> positions;  // for kList: ascending, each once
  int stride = 0;              // for kStride
  std::string text;            // for provenance: the flag, a list written ascending
};

// Throws InputError naming `flag` on malformed input, a position listed twice, or a list
// of position 0 alone (one key: no metric is defined).
QuerySelection parse_query_selection(const std::string& text, const std::string& flag);

// Ascending positions for a sequence of length `seq`; throws InputError
// naming `flag` when a listed position is outside [0, seq).
std::vector<int> resolve_query_rows(const QuerySelection& selection, int seq, const std::string& flag);

}  // namespace attngeom
