#pragma once
// The report's data object: what web/js/*.js draw, built from loaded runs. All
// reductions over heads happen here (so the HTML stays small for large models);
// the script only reshapes for display. Tables are column-oriented JSON:
// {"columns": [names], "rows": [[values]]}, NaN written as null.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "report/run_data.h"

namespace attngeom::report {

struct DataOptions {
  std::string title;                   // shown as the report's heading
  std::string generator;               // e.g. "attngeom 0.1.0 (abc123)"; may be empty
  std::string generated;               // ISO 8601 timestamp of rendering
  std::vector<std::string> run_notes;  // per run, in run order; may be shorter than the runs
};

nlohmann::json build_report_data(const std::vector<RunData>& runs, const DataOptions& options);

// --- pieces, exposed for tests -----------------------------------------------------

// Mean of the finite values; nullopt if there are none.
std::optional<double> finite_mean(std::vector<double> values);
// Quantile q in [0, 1] of the finite values, linear interpolation between order
// statistics (numpy's default); nullopt if there are none.
std::optional<double> finite_quantile(std::vector<double> values, double q);

// Per (n, metric): mean, q25, q75 over heads of the per-head mean, and the mean over
// heads of the reconstructed R1 envelope and of its coverage r1_inside.
nlohmann::json selection_summary(const RunData& run);

// Per (n, series): the mean over heads of the measured share of separated samples and of
// what the reconstructed R2 (a lower bound on the probability) and R3 (a sufficient
// condition) certify of it.
nlohmann::json separation_summary(const RunData& run);

// Key numbers of one run: where F peaks in N, where corr(rho0, R) peaks, type
// shares, envelope coverage, flag counts.
nlohmann::json run_summary(const RunData& run);

// [[field, value], ...] from run.json, for the provenance table. Tolerant: absent
// fields are shown as "—".
nlohmann::json provenance_rows(const RunData& run);

}  // namespace attngeom::report
