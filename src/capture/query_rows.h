#pragma once
// Query-row selection: "last", "all", "stride:K" (the last position and every K-th
// before it, down to 1), or a comma-separated list of positions.
#include <string>
#include <vector>

#include "util/error.h"

namespace attngeom {

struct QuerySelection {
  enum class Kind { kLast, kAll, kStride, kList } kind = Kind::kLast;
  std::vector<int> positions;  // for kList: ascending, each once
  int stride = 0;              // for kStride
  std::string text = "last";   // for provenance: as given, a list written ascending
};

// Throws SettingError naming the setting "queries" on malformed input, a position listed
// twice, or a list of position 0 alone (one key: no metric is defined).
QuerySelection parse_query_selection(const std::string& text);

// Ascending positions for a sequence of length `seq`; throws SettingError naming `subject`
// (by default the setting "queries") when a listed position is outside [0, seq).
std::vector<int> resolve_query_rows(const QuerySelection& selection, int seq,
                                    const SettingMessage& subject = {setting("queries")});

}  // namespace attngeom
