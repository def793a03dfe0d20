#include "prune/topn_policy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "util/csv.h"
#include "util/error.h"

namespace attngeom::prune {

namespace fs = std::filesystem;

std::vector<double> geometric_base_n(const fs::path& run_dir, const HeadTable& table, const TopnRuleOptions& options) {
  const auto count = static_cast<std::size_t>(table.grid.count());
  std::vector<double> base(count, 1.0);
  if (options.rule == TopnRule::kPeak) {
    for (std::size_t i = 0; i < count; ++i) {
      const double n = table.peak_f_n[i];
      base[i] = std::isfinite(n) && n >= 1 ? n : 1.0;
    }
    return base;
  }
  const CsvTable csv = CsvTable::read(run_dir / "selection.csv");
  csv.require_columns({"layer", "head", "n", "f_mean"});
  const std::size_t layer_col = csv.column("layer"), head_col = csv.column("head"), n_col = csv.column("n"),
                    f_col = csv.column("f_mean");
  std::vector<std::map<long, double>> curves(count);  // per head: n -> mean F
  for (std::size_t r = 0; r < csv.rows(); ++r) {
    const long layer = csv.integer(r, layer_col), head = csv.integer(r, head_col), n = csv.integer(r, n_col);
    if (layer < 0 || layer >= table.grid.layers || head < 0 || head >= table.grid.heads || n < 1) {
      throw InputError(csv.path().string() + ":" + std::to_string(r + 2) + ": head " + std::to_string(layer) + "-" +
                       std::to_string(head) + " or N " + std::to_string(n) + " outside the run's grid");
    }
    curves[table.grid.index(static_cast<int>(layer), static_cast<int>(head))][n] = csv.number(r, f_col);
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (curves[i].empty()) throw InputError(csv.path().string() + ": no row for head " + table.grid.name(i));
    const auto nontrivial = curves[i].lower_bound(2);
    if (nontrivial == curves[i].end()) continue;               // only N = 1 measured: 1
    base[i] = static_cast<double>(curves[i].rbegin()->first);  // never reaches tau: the largest grid N
    for (auto it = nontrivial; it != curves[i].end(); ++it) {
      if (it->second >= options.tau) {  // false for NaN
        base[i] = static_cast<double>(it->first);
        break;
      }
    }
  }
  return base;
}

KeptKeys::KeptKeys(std::span<const int> window_lengths, int sliding_window) {
  int most = 0;
  for (const int length : window_lengths) {
    most = std::max(most, sliding_window > 0 ? std::min(length, sliding_window) : length);
  }
  // at_least[k]: queries that see at least k keys; each keeps its k-th key once N >= k.
  std::vector<double> at_least(static_cast<std::size_t>(most) + 1, 0.0);
  for (const int length : window_lengths) {
    for (int i = 0; i < length; ++i) {
      const int keys = sliding_window > 0 ? std::min(i + 1, sliding_window) : i + 1;
      at_least[static_cast<std::size_t>(keys)] += 1;
    }
  }
  for (int k = most - 1; k >= 1; --k)
    at_least[static_cast<std::size_t>(k)] += at_least[static_cast<std::size_t>(k) + 1];
  kept_.assign(at_least.size(), 0.0);
  for (std::size_t n = 1; n < kept_.size(); ++n) kept_[n] = kept_[n - 1] + at_least[n];
}

double KeptKeys::of(int n) const {
  return n <= 0 || n >= max_visible() ? kept_.back() : kept_[static_cast<std::size_t>(n)];
}

double KeptKeys::share(std::span<const int> topn) const {
  double kept = 0;
  for (const int n : topn) kept += of(n);
  const double visible = kept_.back() * static_cast<double>(topn.size());
  return visible > 0 ? kept / visible : 1.0;
}

std::vector<int> allocate_topn(std::span<const double> base, int budget, const KeptKeys& kept) {
  const int most = kept.max_visible();
  ATTNGEOM_CHECK(!base.empty() && budget >= 1 && most >= 1);
  std::vector<int> need(base.size());
  for (std::size_t h = 0; h < base.size(); ++h) {
    ATTNGEOM_CHECK(std::isfinite(base[h]) && base[h] > 0);
    need[h] = static_cast<int>(std::clamp(std::ceil(base[h]), 1.0, static_cast<double>(most)));
  }
  // Level 1..most: min(need, level); most+1..2 most: max(need, level - most). Monotone per head.
  const auto n_at = [&](std::size_t h, int level) {
    return level <= most ? std::min(need[h], level) : std::max(need[h], level - most);
  };
  const auto pairs_at = [&](int level) {
    double sum = 0;
    for (std::size_t h = 0; h < need.size(); ++h) sum += kept.of(n_at(h, level));
    return sum;
  };
  const double target = kept.of(std::min(budget, most)) * static_cast<double>(need.size());
  int lo = 1, hi = 2 * most;  // pairs_at(1) <= target always: the largest level that fits
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (pairs_at(mid) <= target) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  std::vector<int> n(need.size());
  double spent = 0;
  for (std::size_t h = 0; h < need.size(); ++h) spent += kept.of(n[h] = n_at(h, lo));
  if (lo == 2 * most) return n;
  // One level up while the pairs fit: largest base first (a larger base never gets fewer keys).
  std::vector<std::size_t> by_base(need.size());
  std::iota(by_base.begin(), by_base.end(), 0);
  std::stable_sort(by_base.begin(), by_base.end(), [&](std::size_t a, std::size_t b) { return base[a] > base[b]; });
  for (const std::size_t h : by_base) {
    const int up = n_at(h, lo + 1);
    const double extra = kept.of(up) - kept.of(n[h]);
    if (up > n[h] && spent + extra <= target) {
      n[h] = up;
      spent += extra;
    }
  }
  return n;
}

}  // namespace attngeom::prune
