#include "capture/query_rows.h"

#include <algorithm>
#include <sstream>

#include "util/error.h"

namespace attngeom {

QuerySelection parse_query_selection(const std::string& text, const std::string& flag) {
  QuerySelection selection;
  selection.text = text;
  if (text == "last") return selection;
  if (text == "all") {
    selection.kind = QuerySelection::Kind::kAll;
    return selection;
  }
  selection.kind = QuerySelection::Kind::kList;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    long value = -1;
    try {
      value = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || value < 0 || value > (1 << 30)) {
      throw InputError(flag + " '" + text + "': expected last, all, or comma-separated positions >= 0; got '" +
                       item + "'");
    }
    selection.positions.push_back(static_cast<int>(value));
  }
  if (selection.positions.empty()) throw InputError(flag + ": expected last, all, or a list of positions");
  return selection;
}

std::vector<int> resolve_query_rows(const QuerySelection& selection, int seq, const std::string& flag) {
  std::vector<int> rows;
  switch (selection.kind) {
    case QuerySelection::Kind::kLast:
      rows = {seq - 1};
      break;
    case QuerySelection::Kind::kAll:
      rows.resize(static_cast<std::size_t>(seq));
      for (int i = 0; i < seq; ++i) rows[static_cast<std::size_t>(i)] = i;
      break;
    case QuerySelection::Kind::kList:
      rows = selection.positions;
      std::sort(rows.begin(), rows.end());
      rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
      if (rows.back() >= seq) {
        throw InputError(flag + ": position " + std::to_string(rows.back()) + " is outside the " +
                         std::to_string(seq) + "-token sequence (valid: 0.." + std::to_string(seq - 1) + ")");
      }
      break;
  }
  return rows;
}

}  // namespace attngeom
