#include "analysis/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attngeom {
namespace {

double quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(position));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = position - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

}  // namespace

Summary summarize(std::span<const double> values) {
  std::vector<double> finite;
  finite.reserve(values.size());
  for (const double v : values) {
    if (std::isfinite(v)) finite.push_back(v);
  }
  Summary s;
  s.count = finite.size();
  if (finite.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    s.mean = s.std = s.q10 = s.q25 = s.q50 = s.q75 = s.q90 = nan;
    return s;
  }
  double sum = 0;
  for (const double v : finite) sum += v;
  s.mean = sum / static_cast<double>(finite.size());
  double sq = 0;
  for (const double v : finite) sq += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(sq / static_cast<double>(finite.size()));
  std::sort(finite.begin(), finite.end());
  s.q10 = quantile(finite, 0.10);
  s.q25 = quantile(finite, 0.25);
  s.q50 = quantile(finite, 0.50);
  s.q75 = quantile(finite, 0.75);
  s.q90 = quantile(finite, 0.90);
  return s;
}

double finite_mean(std::span<const double> values) {
  double sum = 0;
  std::size_t n = 0;
  for (const double v : values) {
    if (std::isfinite(v)) {
      sum += v;
      ++n;
    }
  }
  return n == 0 ? std::numeric_limits<double>::quiet_NaN() : sum / static_cast<double>(n);
}

}  // namespace attngeom
