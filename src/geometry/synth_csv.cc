#include "geometry/synth_csv.h"

#include <iomanip>
#include <sstream>
#include <system_error>

#include "util/atomic_file.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

// One CSV file: the settings line, a header, then rows. Built in memory and written
// atomically on close (temporary file, then rename), so no half-written CSV is left.
class CsvFile {
 public:
  CsvFile(const std::filesystem::path& path, std::string_view settings, std::string_view header) : path_(path) {
    out_ << std::setprecision(10) << "# " << settings << '\n' << header << '\n';
  }
  std::ostringstream& row() { return out_; }
  void close() {
    const std::string text = out_.str();
    AtomicFile file(path_);
    file.write_at(0, text.data(), text.size());
    file.commit();
  }

 private:
  std::filesystem::path path_;
  std::ostringstream out_;
};

void write_envelope_rows(CsvFile& f, std::size_t point, std::string_view bound, std::span<const EnvelopePoint> envelope) {
  for (const EnvelopePoint& e : envelope) {
    f.row() << point << ',' << bound << ',' << e.n << ',' << e.precision.lower << ',' << e.precision.upper << ','
            << e.recall.lower << ',' << e.recall.upper << ',' << e.f_score.lower << ',' << e.f_score.upper << ','
            << int{e.guarantees_separation} << ',' << int{e.vacuous} << '\n';
  }
}

void write_coverage_row(CsvFile& f, std::size_t point, std::string_view bound, const EnvelopeCoverage& c) {
  f.row() << point << ',' << bound << ',' << c.points << ',' << c.precision << ',' << c.recall << ',' << c.f_score << ','
          << c.all << ',' << c.vacuous_share << ',' << c.mean_width_precision << ',' << c.mean_width_recall << ','
          << c.mean_width_f_score << '\n';
}

}  // namespace

std::vector<std::filesystem::path> write_synth_csv(const std::filesystem::path& directory, std::span<const SynthPoint> points,
                                                   std::string_view settings) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) throw InputError("synth: cannot create " + directory.string() + ": " + error.message());
  std::vector<std::filesystem::path> paths;
  for (const std::string_view name : kSynthCsvFiles) paths.push_back(directory / name);
  CsvFile point_file(paths[0], settings,
                     "point,profile,d,L,lambda,rho_0,beta,cv,seed,measured_nu,measured_cv,measured_lambda,measured_rho_0,"
                     "fitted_beta,beta_fit_mae,beta_fit_r2,negative_pair_share,negative_lag_share,eta_max_deviation,"
                     "sigma2,a_0,a_L,normalised_entropy,recency_mass,top_k_mass,taxonomy_label");
  CsvFile metric_file(paths[1], settings,
                      "point,n,precision,recall,f_score,r_min,r_max,margin,a_in_min,a_out_max,f_best,f_best_radius,s_norm,"
                      "cos_sink,cos_last");
  CsvFile envelope_file(paths[2], settings,
                        "point,bound,n,precision_lower,precision_upper,recall_lower,recall_upper,f_score_lower,"
                        "f_score_upper,guarantees_separation,vacuous");
  CsvFile separation_file(paths[3], settings,
                          "point,bound,n,model_margin,threshold_radius,separation_probability_lower,"
                          "expected_recall_lower,expected_false_positives_upper,measured_margin");
  CsvFile coverage_file(paths[4], settings,
                        "point,bound,points,coverage_precision,coverage_recall,coverage_f_score,coverage_all,"
                        "vacuous_share,mean_width_precision,mean_width_recall,mean_width_f_score");
  for (const SynthPoint& p : points) {
    const RowAnalysis& a = p.analysis;
    point_file.row() << p.index << ',' << profile_name(p.profile) << ',' << p.values.dim << ',' << p.length << ','
                     << p.values.lambda << ',' << p.values.rho_0 << ',' << p.values.beta << ',' << p.values.cv << ','
                     << p.seed << ',' << a.norms.mean_norm << ',' << a.norms.cv << ',' << a.norms.lambda << ',' << a.rho_0
                     << ',' << a.lag.fit.beta << ',' << a.lag.fit.mae << ',' << a.lag.fit.r_squared << ','
                     << a.lag.negative_pair_share << ',' << a.lag.negative_lag_share << ',' << a.deviation.max_abs << ','
                     << a.deviation.sigma2 << ',' << a.mass.sink_mass << ',' << a.mass.last_mass << ','
                     << a.mass.normalised_entropy << ',' << a.mass.recency_mass << ',' << a.mass.top_k_mass << ','
                     << head_type_name(classify(a.taxonomy).label) << '\n';
    for (const SelectionMetrics& m : a.selection) {
      metric_file.row() << p.index << ',' << m.n << ',' << m.precision << ',' << m.recall << ',' << m.f_score << ','
                        << m.r_min << ',' << m.r_max << ',' << m.margin << ',' << m.a_in_min << ',' << m.a_out_max << ','
                        << m.f_best << ',' << m.f_best_radius << ',' << m.s_norm << ',' << m.cos_sink << ',' << m.cos_last
                        << '\n';
    }
    write_envelope_rows(envelope_file, p.index, kR1Name, a.r1);
    write_envelope_rows(envelope_file, p.index, kR2Name, a.r2.points);
    write_envelope_rows(envelope_file, p.index, kR3Name, a.r3);
    for (std::size_t i = 0; i < a.r2.separation.size(); ++i) {
      const SeparationBound& s = a.r2.separation[i];
      separation_file.row() << p.index << ',' << kR2Name << ',' << s.n << ',' << s.model_margin << ',' << s.threshold_radius
                            << ',' << s.separation_probability << ',' << s.expected_recall << ','
                            << s.expected_false_positives << ',' << a.selection[i].margin << '\n';
    }
    write_coverage_row(coverage_file, p.index, kR1Name, a.r1_coverage);
    write_coverage_row(coverage_file, p.index, kR2Name, a.r2_coverage);
    write_coverage_row(coverage_file, p.index, kR3Name, a.r3_coverage);
  }
  for (CsvFile* f : {&point_file, &metric_file, &envelope_file, &separation_file, &coverage_file}) f->close();
  return paths;
}

}  // namespace attngeom::geometry
