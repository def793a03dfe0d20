#include "util/near_name.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

namespace attngeom {
namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string near_name_suggestion(const std::string& given, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_distance = std::clamp<std::size_t>(given.size() / 3, 1, 2) + 1;
  for (const std::string& name : names) {
    const std::size_t d = edit_distance(given, name);
    if (d < best_distance) best_distance = d, best = name;
  }
  return best.empty() ? "" : " (did you mean " + best + "?)";
}

}  // namespace attngeom
