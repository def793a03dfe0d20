#include "geometry/row_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <utility>

#include "util/error.h"

namespace attngeom::geometry {

namespace {

ValueGeometry values_of(const UnitRows& units, const RowAnalysisOptions& options) {
  ValueGeometry v =
      value_geometry(units.keys(), norm_stats(units), sink_similarity(units), lag_curve(units, options.lag));
  if (reads_value_deviation(options)) v.deviation = value_deviation(units, v.model, options);
  return v;
}

void check_given_length(std::size_t given, std::size_t grid, const char* what) {
  if (given != grid) {
    throw InputError("row analysis: " + std::to_string(given) + " " + what + " given for a grid of " +
                     std::to_string(grid));
  }
}

// norms: [M] ||v_k|| of the row's values (bit for bit those of unit_rows); read with bounds only.
// given: parts computed elsewhere, else null.
RowAnalysis complete_row(const HeadRowView& row, const ValueGeometry& values, std::span<const double> norms,
                         const RowAnalysisOptions& options, GivenRowParts* given = nullptr) {
  // `values` came from unit_rows of this row or of one over the same values and more keys,
  // which validated the values.
  const ValidatedRow checked = validated_given_values(row);
  if (!(options.r2_delta > 0.0 && options.r2_delta < 1.0))
    throw InputError("row analysis: r2_delta must lie in (0, 1)");
  const std::size_t keys = row.keys();
  if (values.keys != keys) {
    throw InputError("row analysis: the value geometry is of M = " + std::to_string(values.keys) +
                     " keys, the row has M = " + std::to_string(keys));
  }
  RowAnalysis a;
  a.keys = keys;
  a.n_values = options.every_n ? every_n(keys) : default_n_grid(keys);
  a.norms = values.norms;
  a.rho_0 = values.rho_0;
  a.lag = values.lag;
  a.model = values.model;
  a.mass = given && given->mass ? *given->mass : mass_stats(row.alpha, options.mass);
  a.magnitudes = given && given->magnitudes ? *given->magnitudes : head_magnitudes(checked);

  if (options.every_n) {
    // Every N: the selection sweep needs the double Gram, which then gives the deviations too.
    const RowGram gram = row_gram(row);
    a.selection = selection_metrics(row, gram, a.n_values, options.selection);
    if (options.bounds) a.deviation = cosine_deviation(row, gram, a.model);
  } else {
    if (given && !given->selection.empty()) {
      check_given_length(given->selection.size(), a.n_values.size(), "selection points");
      a.selection = std::move(given->selection);
    } else {
      a.selection = selection_metrics(checked, a.n_values, options.selection);
    }
    a.deviation = values.deviation;
  }
  if (options.bounds) {
    const BoundSettings settings = bound_settings(a.deviation, a.lag, options);
    a.r1_eta = settings.eta;
    if (given && !given->r1.empty()) {
      check_given_length(given->r1.size(), a.n_values.size(), "R1 points");
      check_given_length(given->r2.points.size(), a.n_values.size(), "R2 points");
      a.r1 = std::move(given->r1);
      a.r2 = std::move(given->r2);
    } else {
      ReconstructedEnvelopes envelopes =
          reconstructed_envelopes(BoundInputs{row.alpha, norms, a.model}, a.n_values, settings.eta,
                                  {row.dim, settings.sigma2, options.r2_delta});
      a.r1 = std::move(envelopes.r1);
      a.r2 = std::move(envelopes.r2);
    }
    a.r1_coverage = coverage(a.r1, a.selection);
    a.r2_coverage = coverage(a.r2.points, a.selection);
  }
  a.r3 = sufficient_condition(a.selection, keys);
  a.r3_coverage = coverage(a.r3, a.selection);
  a.taxonomy = taxonomy_features(a.magnitudes, a.selection, keys, options.taxonomy);
  return a;
}

RowAnalysis complete_given_values(const HeadRowView& row, const ValueGeometry& values,
                                  const RowAnalysisOptions& options, GivenRowParts* given) {
  // Only the norms are needed again, and only for envelopes computed here: O(M d), against the
  // O(M^2 d) that values saved.
  const bool envelopes_here = options.bounds && (given == nullptr || given->r1.empty());
  const std::vector<double> norms = envelopes_here ? value_norms(row) : std::vector<double>{};  // [M]
  return complete_row(row, values, norms, options, given);
}

}  // namespace

ValueGeometry value_geometry(std::size_t keys, const NormStats& norms, double rho_0, LagCurve lag) {
  ValueGeometry v;
  v.keys = keys;
  v.norms = norms;
  v.rho_0 = rho_0;
  v.lag = std::move(lag);
  v.model = {v.lag.fit.beta, v.rho_0};
  return v;
}

bool reads_value_deviation(const RowAnalysisOptions& options) { return options.bounds && !options.every_n; }

const PairProducts& pair_products_of(const RowAnalysisOptions& options) {
  return options.pair_products ? *options.pair_products : fp32_pair_products();
}

CosineDeviation value_deviation(const UnitRows& units, const CosineModel& model, const RowAnalysisOptions& options) {
  return screened_cosine_deviation(units, model, pair_products_of(options));
}

CosineDeviation value_deviation(const UnitRows& units, const CosineModel& model, const RowAnalysisOptions& options,
                                const CosineDeviation& spread) {
  return screened_cosine_deviation(units, model, pair_products_of(options), spread);
}

ValueGeometry analyze_values(const HeadRowView& row, const RowAnalysisOptions& options) {
  return values_of(unit_rows(row), options);
}

RowAnalysis analyze_row(const HeadRowView& row, const ValueGeometry& values, const RowAnalysisOptions& options) {
  return complete_given_values(row, values, options, nullptr);
}

RowAnalysis analyze_row(const HeadRowView& row, const ValueGeometry& values, GivenRowParts given,
                        const RowAnalysisOptions& options) {
  if (options.every_n) throw InputError("row analysis: parts are given for the default N grid only");
  return complete_given_values(row, values, options, &given);
}

BoundSettings bound_settings(const CosineDeviation& deviation, const LagCurve& lag, const RowAnalysisOptions& options) {
  return {options.r1_eta == R1Eta::kMaxDeviation ? deviation.max_abs : lag.fit.mae,
          std::max(deviation.sigma2, std::numeric_limits<double>::min())};
}

RowAnalysis analyze_row(const HeadRowView& row, const RowAnalysisOptions& options) {
  const UnitRows units = unit_rows(row);
  return complete_row(row, values_of(units, options), units.norms, options);
}

}  // namespace attngeom::geometry
