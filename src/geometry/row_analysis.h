#pragma once
// Everything the geometry module measures on one (layer, head, sequence, query row), in one
// call that shares the unit vectors (and, for every N, one Gram matrix): the entry point for
// the analysis command. Aggregating
// over sequences (means, quantiles, the mean attention row for the four-phase fit, the
// taxonomy features, sink-vs-recall across heads) is the caller's part.
#include <cstddef>
#include <optional>
#include <vector>

#include "geometry/cosine_model.h"
#include "geometry/head_features.h"
#include "geometry/head_row.h"
#include "geometry/mass_stats.h"
#include "geometry/pair_products.h"
#include "geometry/reconstructed_bounds.h"
#include "geometry/selection_metrics.h"
#include "geometry/value_diagnostics.h"

namespace attngeom::geometry {

// Which bound on the cosine deviations R1 uses (docs/method.md section 4: the
// measured maximum, or the fit's MAE as a typical value).
enum class R1Eta {
  kMaxDeviation,  // max |delta| over all pairs: R1 then provably holds
  kLagFitMae,     // the lag fit's MAE: a typical deviation, an indicative envelope only
};

struct RowAnalysisOptions {
  bool every_n = false;  // N: the default grid (docs/method.md section 2), or every N in 1..M-1
  SelectionOptions selection;
  LagCurveOptions lag;
  MassOptions mass;
  FeatureWindow taxonomy;  // where the taxonomy features read the N grid
  bool bounds = true;      // R1 and R2: they need every pairwise cosine, O(M^2 d)
  // Screens the pairwise cosines for the deviations (pair_products.h); null: fp32. With
  // every_n the double Gram that the selection needs anyway serves instead.
  const PairProducts* pair_products = nullptr;
  R1Eta r1_eta = R1Eta::kMaxDeviation;
  double r2_delta = 0.05;  // R2's stated violation probability at each N
};

struct RowAnalysis {
  std::size_t keys = 0;  // M, the row's keys 0..L
  std::vector<std::size_t> n_values;
  std::vector<SelectionMetrics> selection;  // [n_values.size()]
  NormStats norms;
  double rho_0 = 0.0;
  LagCurve lag;
  MassStats mass;
  HeadMagnitudes magnitudes;
  TaxonomyFeatures taxonomy;  // features of this row; classify() after averaging over sequences
  // The cosine model the bounds use: fitted beta and measured rho_0, and how far the row's
  // cosines stray from it (eta = max_abs, sigma^2 for R2).
  CosineModel model;
  CosineDeviation deviation;
  double r1_eta = 0.0;
  std::vector<EnvelopePoint> r1;  // empty when options.bounds is false
  ProbabilisticEnvelope r2;       // empty when options.bounds is false
  std::vector<EnvelopePoint> r3;
  EnvelopeCoverage r1_coverage;
  EnvelopeCoverage r2_coverage;
  EnvelopeCoverage r3_coverage;
};

RowAnalysis analyze_row(const HeadRowView& row, const RowAnalysisOptions& options = {});

// The part of a row's analysis that reads its values alone (keys 0..M-1), not alpha: the
// heads of a GQA group that read one kv head over the same keys share it, so analyze
// computes it once per group. Half or more of a row's cost (the O(M^2 d) screen among it).
struct ValueGeometry {
  std::size_t keys = 0;  // M
  NormStats norms;
  double rho_0 = 0.0;
  LagCurve lag;
  CosineModel model;
  CosineDeviation deviation;  // with bounds and the default grid; every_n takes it from the Gram
};
ValueGeometry analyze_values(const HeadRowView& row, const RowAnalysisOptions& options = {});

// The parts of analyze_values: the value geometry of a row of `keys` keys from its norms,
// rho_0 and lag curve (the model from the fit and rho_0), without the deviations; those it
// holds where reads_value_deviation(options), from the row's units and that model.
ValueGeometry value_geometry(std::size_t keys, const NormStats& norms, double rho_0, LagCurve lag);
bool reads_value_deviation(const RowAnalysisOptions& options);
// The deviation screen's kernel: options.pair_products, or fp32 where none is given.
const PairProducts& pair_products_of(const RowAnalysisOptions& options);
CosineDeviation value_deviation(const UnitRows& units, const CosineModel& model, const RowAnalysisOptions& options);
// The same with its pairs and sigma2 given (deviation_spread of these units and model).
CosineDeviation value_deviation(const UnitRows& units, const CosineModel& model, const RowAnalysisOptions& options,
                                const CosineDeviation& spread);

// analyze_row(row, options) given analyze_values(row', options) for a row' with the same
// values and keys (any alpha) and the same options; InputError when the keys differ. The
// values, which analyze_values checked, are not scanned again.
RowAnalysis analyze_row(const HeadRowView& row, const ValueGeometry& values, const RowAnalysisOptions& options = {});

// What R1 and R2 take from a row's value geometry: R1's eta (RowAnalysisOptions::r1_eta) and
// R2's sigma^2 (a row whose cosines match the model exactly has sigma^2 = 0: R2 then collapses
// onto the model, which the smallest positive sigma^2 expresses).
struct BoundSettings {
  double eta = 0.0;
  double sigma2 = 0.0;
};
BoundSettings bound_settings(const CosineDeviation& deviation, const LagCurve& lag, const RowAnalysisOptions& options);

// Parts of a row's analysis computed elsewhere (a GPU), on the default N grid with the same
// options; an empty part is computed here.
struct GivenRowParts {
  std::vector<SelectionMetrics> selection;  // selection_metrics(row, default_n_grid(M), options.selection)
  // With r2: reconstructed_envelopes(row, the grid, bound_settings(the values' geometry)), given together.
  std::vector<EnvelopePoint> r1;
  ProbabilisticEnvelope r2;
  std::optional<MassStats> mass;             // mass_stats(alpha, options.mass)
  std::optional<HeadMagnitudes> magnitudes;  // head_magnitudes(row)
};

// analyze_row(row, values, options) with the given parts; not with every_n.
RowAnalysis analyze_row(const HeadRowView& row, const ValueGeometry& values, GivenRowParts given,
                        const RowAnalysisOptions& options = {});

}  // namespace attngeom::geometry
