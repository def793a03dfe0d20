#include "analysis/synth_csv.h"

#include <system_error>

#include "stats/taxonomy.h"
#include "util/csv.h"
#include "util/error.h"

namespace attngeom {
namespace {

using geometry::EnvelopeCoverage;
using geometry::EnvelopePoint;

void add_envelope_rows(CsvWriter& f, std::size_t point, std::string_view bound,
                       std::span<const EnvelopePoint> envelope) {
  for (const EnvelopePoint& e : envelope) {
    f.add(point).add(std::string(bound)).add(e.n).add(e.precision.lower).add(e.precision.upper).add(e.recall.lower);
    f.add(e.recall.upper)
        .add(e.f_score.lower)
        .add(e.f_score.upper)
        .add(int{e.guarantees_separation})
        .add(int{e.vacuous});
    f.end_row();
  }
}

void add_coverage_row(CsvWriter& f, std::size_t point, std::string_view bound, const EnvelopeCoverage& c) {
  f.add(point).add(std::string(bound)).add(c.points).add(c.precision).add(c.recall).add(c.f_score).add(c.all);
  f.add(c.vacuous_share).add(c.mean_width_precision).add(c.mean_width_recall).add(c.mean_width_f_score);
  f.end_row();
}

}  // namespace

std::vector<std::filesystem::path> write_synth_csv(const std::filesystem::path& directory,
                                                   std::span<const synth::SynthPoint> points,
                                                   const std::string& settings) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) throw InputError("synth: cannot create " + directory.string() + ": " + error.message());
  const auto table = [&](const std::vector<std::string>& columns) {
    return CsvWriter(columns, CsvReals::kTenDigits, settings);
  };
  CsvWriter point_file = table({"point",
                                "profile",
                                "d",
                                "L",
                                "lambda",
                                "rho_0",
                                "beta",
                                "cv",
                                "seed",
                                "measured_nu",
                                "measured_cv",
                                "measured_lambda",
                                "measured_rho_0",
                                "fitted_beta",
                                "beta_fit_mae",
                                "beta_fit_r2",
                                "negative_pair_share",
                                "negative_lag_share",
                                "eta_max_deviation",
                                "sigma2",
                                "a_0",
                                "a_L",
                                "normalised_entropy",
                                "recency_mass",
                                "top_k_mass",
                                "taxonomy_label"});
  CsvWriter metric_file = table({"point", "n", "precision", "recall", "f_score", "r_min", "r_max", "margin", "a_in_min",
                                 "a_out_max", "f_best", "f_best_radius", "s_norm", "cos_sink", "cos_last"});
  CsvWriter envelope_file =
      table({"point", "bound", "n", "precision_lower", "precision_upper", "recall_lower", "recall_upper",
             "f_score_lower", "f_score_upper", "guarantees_separation", "vacuous"});
  CsvWriter separation_file =
      table({"point", "bound", "n", "model_margin", "threshold_radius", "separation_probability_lower",
             "expected_recall_lower", "expected_false_positives_upper", "measured_margin"});
  CsvWriter coverage_file =
      table({"point", "bound", "points", "coverage_precision", "coverage_recall", "coverage_f_score", "coverage_all",
             "vacuous_share", "mean_width_precision", "mean_width_recall", "mean_width_f_score"});
  for (const synth::SynthPoint& p : points) {
    const geometry::RowAnalysis& a = p.analysis;
    point_file.add(p.index).add(std::string(synth::profile_name(p.profile))).add(p.values.dim).add(p.length);
    point_file.add(p.values.lambda).add(p.values.rho_0).add(p.values.beta).add(p.values.cv).add(p.seed);
    point_file.add(a.norms.mean_norm).add(a.norms.cv).add(a.norms.lambda).add(a.rho_0).add(a.lag.fit.beta);
    point_file.add(a.lag.fit.mae).add(a.lag.fit.r_squared).add(a.lag.negative_pair_share).add(a.lag.negative_lag_share);
    point_file.add(a.deviation.max_abs).add(a.deviation.sigma2).add(a.mass.sink_mass).add(a.mass.last_mass);
    point_file.add(a.mass.normalised_entropy).add(a.mass.recency_mass).add(a.mass.top_k_mass);
    point_file.add(std::string(stats::head_type_name(stats::classify(a.taxonomy).label)));
    point_file.end_row();
    for (const geometry::SelectionMetrics& m : a.selection) {
      metric_file.add(p.index).add(m.n).add(m.precision).add(m.recall).add(m.f_score).add(m.r_min).add(m.r_max);
      metric_file.add(m.margin).add(m.a_in_min).add(m.a_out_max).add(m.f_best).add(m.f_best_radius).add(m.s_norm);
      metric_file.add(m.cos_sink).add(m.cos_last);
      metric_file.end_row();
    }
    add_envelope_rows(envelope_file, p.index, geometry::kR1Name, a.r1);
    add_envelope_rows(envelope_file, p.index, geometry::kR2Name, a.r2.points);
    add_envelope_rows(envelope_file, p.index, geometry::kR3Name, a.r3);
    for (std::size_t i = 0; i < a.r2.separation.size(); ++i) {
      const geometry::SeparationBound& s = a.r2.separation[i];
      separation_file.add(p.index).add(std::string(geometry::kR2Name)).add(s.n).add(s.model_margin);
      separation_file.add(s.threshold_radius).add(s.separation_probability).add(s.expected_recall);
      separation_file.add(s.expected_false_positives).add(a.selection[i].margin);
      separation_file.end_row();
    }
    add_coverage_row(coverage_file, p.index, geometry::kR1Name, a.r1_coverage);
    add_coverage_row(coverage_file, p.index, geometry::kR2Name, a.r2_coverage);
    add_coverage_row(coverage_file, p.index, geometry::kR3Name, a.r3_coverage);
  }
  std::vector<std::filesystem::path> paths;
  for (const std::string_view name : kSynthCsvFiles) paths.push_back(directory / name);
  const CsvWriter* files[] = {&point_file, &metric_file, &envelope_file, &separation_file, &coverage_file};
  for (std::size_t i = 0; i < paths.size(); ++i) files[i]->write(paths[i]);
  return paths;
}

}  // namespace attngeom
