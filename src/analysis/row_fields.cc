#include "analysis/row_fields.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <utility>

#include "util/error.h"

namespace attngeom {
namespace {

using geometry::EnvelopePoint;
using geometry::RowAnalysis;
using geometry::SelectionMetrics;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What one per-N field reads: the metrics at grid index g of the row's analysis.
using PerNGetter = std::function<double(const RowAnalysis&, std::size_t)>;
using PerRowGetter = std::function<double(const RowAnalysis&)>;

double inside(double value, const geometry::Interval& interval) {
  return value >= interval.lower && value <= interval.upper ? 1.0 : 0.0;
}

const std::vector<std::pair<std::string, PerNGetter>>& per_n_fields() {
  static const std::vector<std::pair<std::string, PerNGetter>> fields = [] {
    std::vector<std::pair<std::string, PerNGetter>> f = {
        {"precision", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].precision; }},
        {"recall", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].recall; }},
        {"f", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].f_score; }},
        {"f_best", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].f_best; }},
        {"r_min", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].r_min; }},
        {"r_max", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].r_max; }},
        {"margin", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].margin; }},
        {"a_in_min", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].a_in_min; }},
        {"a_out_max", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].a_out_max; }},
        {"s_norm", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].s_norm; }},
        {"cos_sink", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].cos_sink; }},
        {"cos_last", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].cos_last; }},
        {"separated", [](const RowAnalysis& a, std::size_t g) { return a.selection[g].margin > 0 ? 1.0 : 0.0; }},
        {"r1_precision_lo", [](const RowAnalysis& a, std::size_t g) { return a.r1[g].precision.lower; }},
        {"r1_precision_hi", [](const RowAnalysis& a, std::size_t g) { return a.r1[g].precision.upper; }},
        {"r1_recall_lo", [](const RowAnalysis& a, std::size_t g) { return a.r1[g].recall.lower; }},
        {"r1_recall_hi", [](const RowAnalysis& a, std::size_t g) { return a.r1[g].recall.upper; }},
        {"r1_f_lo", [](const RowAnalysis& a, std::size_t g) { return a.r1[g].f_score.lower; }},
        {"r1_f_hi", [](const RowAnalysis& a, std::size_t g) { return a.r1[g].f_score.upper; }},
        {"r1_inside",
         [](const RowAnalysis& a, std::size_t g) {
           const SelectionMetrics& m = a.selection[g];
           const EnvelopePoint& e = a.r1[g];
           return inside(m.precision, e.precision) * inside(m.recall, e.recall) * inside(m.f_score, e.f_score);
         }},
        {"r1_vacuous", [](const RowAnalysis& a, std::size_t g) { return a.r1[g].vacuous ? 1.0 : 0.0; }},
        {"r2_recall_lo", [](const RowAnalysis& a, std::size_t g) { return a.r2.separation[g].expected_recall; }},
        {"r2_fp_hi", [](const RowAnalysis& a, std::size_t g) { return a.r2.separation[g].expected_false_positives; }},
        {"r2_separation_prob",
         [](const RowAnalysis& a, std::size_t g) { return a.r2.separation[g].separation_probability; }},
        {"r2_vacuous", [](const RowAnalysis& a, std::size_t g) { return a.r2.points[g].vacuous ? 1.0 : 0.0; }},
        {"r3_certified", [](const RowAnalysis& a, std::size_t g) { return a.r3[g].guarantees_separation ? 1.0 : 0.0; }},
    };
    // F in the closed ball of radius rho ||s_N|| around s_N: docs/method.md section 2's normalised-radius curves.
    const std::vector<std::string> names = normalised_radius_fields();
    for (std::size_t i = 0; i < names.size(); ++i) {
      f.emplace_back(names[i], [i](const RowAnalysis& a, std::size_t g) {
        return a.selection[g].at_normalised_radius[i].f_score;
      });
    }
    return f;
  }();
  return fields;
}

const std::vector<std::pair<std::string, PerRowGetter>>& per_row_fields() {
  static const std::vector<std::pair<std::string, PerRowGetter>> fields = {
      {"sink_mass", [](const RowAnalysis& a) { return a.mass.sink_mass; }},
      {"last_mass", [](const RowAnalysis& a) { return a.mass.last_mass; }},
      {"entropy", [](const RowAnalysis& a) { return a.mass.normalised_entropy; }},
      {"recency_mass", [](const RowAnalysis& a) { return a.mass.recency_mass; }},
      {"topk_mass", [](const RowAnalysis& a) { return a.mass.top_k_mass; }},
      // Undefined on short rows (early queries of --queries all): NaN, which the means skip,
      // not the 0 the diagnostics return there. A1/A2 need a content key, cv two, the
      // negative share one lag and the decay fit two.
      {"nu", [](const RowAnalysis& a) { return a.keys < 2 ? kNaN : a.norms.mean_norm; }},
      {"cv", [](const RowAnalysis& a) { return a.keys < 3 ? kNaN : a.norms.cv; }},
      {"lambda", [](const RowAnalysis& a) { return a.keys < 2 ? kNaN : a.norms.lambda; }},
      {"rho0", [](const RowAnalysis& a) { return a.keys < 2 ? kNaN : a.rho_0; }},
      {"beta", [](const RowAnalysis& a) { return a.lag.mean_cosine.size() < 2 ? kNaN : a.lag.fit.beta; }},
      {"beta_mae", [](const RowAnalysis& a) { return a.lag.mean_cosine.size() < 2 ? kNaN : a.lag.fit.mae; }},
      {"beta_r2", [](const RowAnalysis& a) { return a.lag.mean_cosine.size() < 2 ? kNaN : a.lag.fit.r_squared; }},
      {"negative_cos_share",
       [](const RowAnalysis& a) { return a.lag.mean_cosine.empty() ? kNaN : a.lag.negative_pair_share; }},
      // Not measured without the bounds (--no-bounds): NaN, not a 0 that reads as exact.
      {"sigma2", [](const RowAnalysis& a) { return a.r1.empty() ? kNaN : a.deviation.sigma2; }},
      {"eta", [](const RowAnalysis& a) { return a.r1.empty() ? kNaN : a.r1_eta; }},
      {"sink_magnitude", [](const RowAnalysis& a) { return a.magnitudes.sink; }},
      {"last_magnitude", [](const RowAnalysis& a) { return a.magnitudes.last; }},
      {"rest_magnitude", [](const RowAnalysis& a) { return a.magnitudes.rest; }},
      {"sink_share", [](const RowAnalysis& a) { return a.taxonomy.sink_share; }},
      {"last_share", [](const RowAnalysis& a) { return a.taxonomy.last_share; }},
      {"rest_share", [](const RowAnalysis& a) { return a.taxonomy.rest_share; }},
      {"cos_sink_small", [](const RowAnalysis& a) { return a.taxonomy.cos_sink_small; }},
      {"cos_sink_large", [](const RowAnalysis& a) { return a.taxonomy.cos_sink_large; }},
      {"cos_last_small", [](const RowAnalysis& a) { return a.taxonomy.cos_last_small; }},
      {"cos_last_large", [](const RowAnalysis& a) { return a.taxonomy.cos_last_large; }},
  };
  return fields;
}

}  // namespace

std::vector<std::string> normalised_radius_fields() {
  std::vector<std::string> names;
  for (const double rho : geometry::SelectionOptions{}.normalised_radii) {
    char name[32];
    std::snprintf(name, sizeof name, "f_at_r%g", rho);
    names.emplace_back(name);
  }
  return names;
}

RecordSchema make_record_schema(std::size_t seq_len, bool every_n) {
  RecordSchema schema;
  for (const auto& [name, getter] : per_n_fields()) schema.per_n_fields.push_back(name);
  for (const auto& [name, getter] : per_row_fields()) schema.per_row_fields.push_back(name);
  schema.n_grid = every_n ? geometry::every_n(seq_len) : geometry::default_n_grid(seq_len);
  return schema;
}

void fill_row_fields(const RecordSchema& schema, const RowAnalysis& analysis, std::span<double> per_n,
                     std::span<double> per_row) {
  const auto& n_fields = per_n_fields();
  const auto& row_fields = per_row_fields();
  ATTNGEOM_CHECK(per_n.size() == schema.n_grid.size() * n_fields.size());
  ATTNGEOM_CHECK(per_row.size() == row_fields.size());
  std::fill(per_n.begin(), per_n.end(), kNaN);
  for (std::size_t g = 0, r = 0; g < schema.n_grid.size(); ++g) {
    while (r < analysis.n_values.size() && analysis.n_values[r] < schema.n_grid[g]) ++r;
    if (r == analysis.n_values.size() || analysis.n_values[r] != schema.n_grid[g]) continue;
    for (std::size_t k = 0; k < n_fields.size(); ++k) {
      // R1 and R2 are absent when the bounds were switched off (--no-bounds): leave NaN.
      const bool bound = n_fields[k].first.rfind("r1_", 0) == 0 || n_fields[k].first.rfind("r2_", 0) == 0;
      if (bound && analysis.r1.empty()) continue;
      per_n[g * n_fields.size() + k] = n_fields[k].second(analysis, r);
    }
  }
  for (std::size_t k = 0; k < row_fields.size(); ++k) per_row[k] = row_fields[k].second(analysis);
}

}  // namespace attngeom
