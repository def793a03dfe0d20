#include "prune/topn_policy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "report/csv_table.h"
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
  const report::CsvTable csv = report::CsvTable::read(run_dir / "selection.csv");
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
    if (nontrivial == curves[i].end()) continue;  // only N = 1 measured: 1
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

std::vector<int> apportion_keys(std::span<const double> base, long total, int max_n) {
  const auto count = static_cast<long>(base.size());
  ATTNGEOM_CHECK(count > 0 && max_n >= 1 && total >= count && total <= count * max_n);
  for (const double w : base) ATTNGEOM_CHECK(std::isfinite(w) && w > 0);
  // Water-filling: the scale c with sum_h clamp(c * base_h, 1, max_n) = total.
  const auto filled = [&](double c) {
    double sum = 0;
    for (const double w : base) sum += std::clamp(c * w, 1.0, static_cast<double>(max_n));
    return sum;
  };
  double lo = 0, hi = static_cast<double>(max_n) / *std::min_element(base.begin(), base.end());
  for (int iter = 0; iter < 200; ++iter) {
    const double mid = 0.5 * (lo + hi);
    (filled(mid) < static_cast<double>(total) ? lo : hi) = mid;
  }
  std::vector<double> quota(base.size());
  std::vector<int> n(base.size());
  long sum = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    quota[i] = std::clamp(hi * base[i], 1.0, static_cast<double>(max_n));
    // A quota within rounding of an integer counts as that integer (equal bases stay equal).
    const double nearest = std::round(quota[i]);
    if (std::abs(quota[i] - nearest) < 1e-9 * std::max(1.0, nearest)) quota[i] = nearest;
    n[i] = static_cast<int>(std::floor(quota[i]));
    sum += n[i];
  }
  // Largest remainders first (ties to the lower index) while short; smallest first while over.
  std::vector<std::size_t> by_remainder(base.size());
  std::iota(by_remainder.begin(), by_remainder.end(), 0);
  std::stable_sort(by_remainder.begin(), by_remainder.end(), [&](std::size_t a, std::size_t b) {
    return quota[a] - std::floor(quota[a]) > quota[b] - std::floor(quota[b]);
  });
  while (sum < total) {
    bool moved = false;
    for (const std::size_t i : by_remainder) {
      if (sum == total) break;
      if (n[i] < max_n) {
        ++n[i];
        ++sum;
        moved = true;
      }
    }
    ATTNGEOM_CHECK(moved);
  }
  while (sum > total) {
    bool moved = false;
    for (auto it = by_remainder.rbegin(); it != by_remainder.rend() && sum > total; ++it) {
      if (n[*it] > 1) {
        --n[*it];
        --sum;
        moved = true;
      }
    }
    ATTNGEOM_CHECK(moved);
  }
  return n;
}

double kept_key_share(std::span<const int> topn, std::span<const int> window_lengths, int sliding_window) {
  double kept = 0, visible = 0;
  for (const int length : window_lengths) {
    for (int i = 0; i < length; ++i) {
      const int keys = sliding_window > 0 ? std::min(i + 1, sliding_window) : i + 1;
      for (const int n : topn) kept += n > 0 ? std::min(n, keys) : keys;
      visible += static_cast<double>(keys) * static_cast<double>(topn.size());
    }
  }
  return visible > 0 ? kept / visible : 1.0;
}

}  // namespace attngeom::prune
