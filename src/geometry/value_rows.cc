#include "geometry/value_rows.h"

#include <algorithm>
#include <string>

#include "util/error.h"

namespace attngeom::geometry {
namespace {

std::size_t largest_max_lag(std::span<const std::size_t> max_lags) {
  return *std::max_element(max_lags.begin(), max_lags.end());
}

// The first `keys` keys of units, as unit_rows of that row gives them.
UnitRows prefix_of(const UnitRows& units, std::size_t keys) {
  UnitRows out;
  out.dim = units.dim;
  out.values = units.values;
  out.inverse_norms.assign(units.inverse_norms.begin(), units.inverse_norms.begin() + keys);
  out.rounded.assign(units.rounded.begin(), units.rounded.begin() + keys * units.dim);
  out.norms.assign(units.norms.begin(), units.norms.begin() + keys);
  out.defined.assign(units.defined.begin(), units.defined.begin() + keys);
  return out;
}

std::vector<std::size_t> checked_keys(std::span<const std::size_t> keys, std::size_t longest) {
  if (keys.empty() || !std::is_sorted(keys.begin(), keys.end()) || keys.front() == 0 || keys.back() != longest) {
    throw InputError("value rows: row lengths must ascend from 1 to the longest row's M = " + std::to_string(longest));
  }
  return {keys.begin(), keys.end()};
}

std::vector<std::size_t> max_lags_of(std::span<const std::size_t> keys, const LagCurveOptions& options) {
  std::vector<std::size_t> out;
  for (const std::size_t m : keys) out.push_back(lag_curve_max_lag(m, options));
  return out;
}

// Whether the rows' own screens would visit more pairs than the shared maxima, whose walk by lag
// costs a few times a screened pair (bench/geometry_row_bench.cc, BM_DeviationsOfStridedRows,
// finds where the two meet).
bool shares_maxima(std::span<const std::size_t> keys) {
  constexpr double kPairCostRatio = 2.0;
  double own = 0.0;
  for (const std::size_t m : keys) own += static_cast<double>(m) * static_cast<double>(m);
  const auto longest = static_cast<double>(keys.back());
  return own > kPairCostRatio * longest * longest;
}

}  // namespace

ValueRows::ValueRows(const HeadRowView& longest, std::span<const std::size_t> keys, const RowAnalysisOptions& options,
                     DeviationMethod method)
    : keys_(checked_keys(keys, longest.keys())),
      options_(options),
      units_(unit_rows(longest)),
      sink_cosines_(sink_cosines(units_)),
      max_lags_(max_lags_of(keys, options.lag)),
      band_(units_, largest_max_lag(max_lags_)) {
  if (reads_value_deviation(options) &&
      (method == DeviationMethod::kSharedMaxima || (method == DeviationMethod::kAutomatic && shares_maxima(keys_)))) {
    maxima_.emplace(units_, keys_, pair_products_of(options));
  }
  if (reads_value_deviation(options)) square_sums_.emplace(units_, keys_);
}

void ValueRows::finish_band() { sums_ = band_.sums_of_rows(keys_, max_lags_); }

ValueGeometry ValueRows::row(std::size_t r) const {
  ATTNGEOM_CHECK(sums_.size() == keys_.size());
  const std::size_t keys = keys_[r];
  ValueGeometry v = value_geometry(keys, norm_stats(std::span<const double>(units_.norms).first(keys)),
                                   sink_similarity(sink_cosines_, units_.defined, keys),
                                   lag_curve_from_sums(sums_[r], max_lags_[r], options_.lag));
  if (square_sums_) {
    const auto defined = static_cast<std::size_t>(std::count(units_.defined.begin(), units_.defined.begin() + keys, 1));
    const CosineDeviation spread =
        deviation_spread(defined, units_.dim, [&] { return square_sums_->of_row(r, v.model); });
    v.deviation = maxima_ ? spread : value_deviation(prefix_of(units_, keys), v.model, options_, spread);
  }
  return v;
}

void ValueRows::compute_deviations(std::size_t part, std::span<const ValueGeometry> rows) {
  ATTNGEOM_CHECK(maxima_ && rows.size() == keys_.size());
  std::vector<CosineModel> models;  // [rows]
  for (const ValueGeometry& v : rows) models.push_back(v.model);
  maxima_->compute(part, models);
}

void ValueRows::finish_deviations(std::span<ValueGeometry> rows) const {
  ATTNGEOM_CHECK(maxima_ && rows.size() == keys_.size());
  const std::vector<double> maxima = maxima_->maxima();
  for (std::size_t r = 0; r < rows.size(); ++r) rows[r].deviation.max_abs = maxima[r];
}

}  // namespace attngeom::geometry
