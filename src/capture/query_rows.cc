#include "capture/query_rows.h"

#include <algorithm>
#include <sstream>

#include "util/error.h"

namespace attngeom {

QuerySelection parse_query_selection(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return SettingError({setting("queries"), " '" + text + "': " + why});
  };
  QuerySelection selection;
  selection.text = text;
  if (text == "last") return selection;
  if (text == "all") {
    selection.kind = QuerySelection::Kind::kAll;
    return selection;
  }
  if (text.rfind("stride:", 0) == 0) {
    selection.kind = QuerySelection::Kind::kStride;
    std::size_t used = 0;
    long value = 0;
    try {
      value = std::stol(text.substr(7), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size() - 7 || value < 1 || value > (1 << 30)) {
      throw bad("expected stride:K with K >= 1");
    }
    selection.stride = static_cast<int>(value);
    return selection;
  }
  selection.kind = QuerySelection::Kind::kList;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const bool digits = !item.empty() && item.size() <= 10 && item.find_first_not_of("0123456789") == std::string::npos;
    const long value = digits ? std::stol(item) : -1;
    if (value < 0 || value > (1 << 30)) {
      throw bad("expected last, all, stride:K, or comma-separated positions >= 0; got '" + item + "'");
    }
    selection.positions.push_back(static_cast<int>(value));
  }
  if (selection.positions.empty() || text.back() == ',') {
    throw bad("expected last, all, stride:K, or comma-separated positions >= 0");
  }
  // Ascending, each once, and recorded that way: "63,1" and "1,63" are one selection to --resume and merge.
  std::sort(selection.positions.begin(), selection.positions.end());
  const auto twice = std::adjacent_find(selection.positions.begin(), selection.positions.end());
  if (twice != selection.positions.end()) {
    throw bad("position " + std::to_string(*twice) + " appears twice");
  }
  if (selection.positions.back() == 0) {
    throw bad("position 0 sees one key (BOS), where no metric is defined; expected at least one position >= 1");
  }
  selection.text.clear();
  for (const int p : selection.positions) {
    if (!selection.text.empty()) selection.text += ',';
    selection.text += std::to_string(p);
  }
  return selection;
}

std::vector<int> resolve_query_rows(const QuerySelection& selection, int seq, const SettingMessage& subject) {
  std::vector<int> rows;
  switch (selection.kind) {
    case QuerySelection::Kind::kLast:
      rows = {seq - 1};
      break;
    case QuerySelection::Kind::kAll:
      rows.resize(static_cast<std::size_t>(seq));
      for (int i = 0; i < seq; ++i) rows[static_cast<std::size_t>(i)] = i;
      break;
    case QuerySelection::Kind::kStride:
      for (int i = seq - 1; i >= 1; i -= selection.stride) rows.push_back(i);
      if (rows.empty()) rows.push_back(seq - 1);
      std::reverse(rows.begin(), rows.end());
      break;
    case QuerySelection::Kind::kList:
      rows = selection.positions;
      if (rows.back() >= seq) {
        throw SettingError(subject + SettingMessage(": position " + std::to_string(rows.back()) + " is outside the " +
                                                    std::to_string(seq) + "-token sequence (valid: 0.." +
                                                    std::to_string(seq - 1) + ")"));
      }
      break;
  }
  return rows;
}

}  // namespace attngeom
