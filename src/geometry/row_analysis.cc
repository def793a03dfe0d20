#include "geometry/row_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "util/error.h"

namespace attngeom::geometry {

RowAnalysis analyze_row(const HeadRowView& row, const RowAnalysisOptions& options) {
  validate(row);
  if (!(options.r2_delta > 0.0 && options.r2_delta < 1.0)) throw InputError("row analysis: r2_delta must lie in (0, 1)");
  RowAnalysis a;
  const std::size_t keys = row.keys();
  a.n_values = options.every_n ? every_n(keys) : default_n_grid(keys);
  a.norms = norm_stats(row);
  a.rho_0 = sink_similarity(row);
  a.lag = lag_curve(row, options.lag);
  a.mass = mass_stats(row.alpha, options.mass);
  a.magnitudes = head_magnitudes(row);
  a.model = {a.lag.fit.beta, a.rho_0};

  if (!options.bounds) {
    a.selection = selection_metrics(row, a.n_values, options.selection);
  } else {
    const RowGram gram = row_gram(row);
    a.selection = selection_metrics(row, gram, a.n_values, options.selection);
    a.deviation = cosine_deviation(row, gram, a.model);
    std::vector<double> norms(keys);  // [M] nu_k
    for (std::size_t k = 0; k < keys; ++k) norms[k] = std::sqrt(gram.entries[k * keys + k]);
    const BoundInputs inputs{row.alpha, norms, a.model};
    a.r1_eta = options.r1_eta == R1Eta::kMaxDeviation ? a.deviation.max_abs : a.lag.fit.mae;
    a.r1 = deterministic_envelope(inputs, a.n_values, a.r1_eta);
    // A row whose cosines match the model exactly has sigma^2 = 0: R2 then collapses onto the
    // model, which the smallest positive sigma^2 expresses.
    const double sigma2 = std::max(a.deviation.sigma2, std::numeric_limits<double>::min());
    a.r2 = probabilistic_envelope(inputs, a.n_values, {row.dim, sigma2, options.r2_delta});
    a.r1_coverage = coverage(a.r1, a.selection);
    a.r2_coverage = coverage(a.r2.points, a.selection);
  }
  a.r3 = sufficient_condition(a.selection, keys);
  a.r3_coverage = coverage(a.r3, a.selection);
  a.taxonomy = taxonomy_features(a.magnitudes, a.selection, keys, options.taxonomy);
  return a;
}

}  // namespace attngeom::geometry
