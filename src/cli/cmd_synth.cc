// attngeom synth: the synthetic ablation of docs/method.md section 8 (profiles x value-model parameters),
// written as CSV. The numbers come from synth/synth_sweep.h; this file only maps flags.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "analysis/run_dir.h"
#include "analysis/synth_csv.h"
#include "cli/commands.h"
#include "synth/synth_sweep.h"
#include "util/error.h"
#include "util/plural.h"
#include "util/version.h"

namespace attngeom::cli {
namespace {

struct SynthSettings {
  std::string out;
  std::uint64_t seed = 1;
  std::vector<std::string> profiles = {"four-phase", "uniform", "bimodal", "power-law"};
  std::vector<std::size_t> dims;
  std::vector<std::size_t> lengths;
  std::vector<double> lambdas;
  std::vector<double> rho_0s;
  std::vector<double> betas;
  std::vector<double> cvs;
  double nu = 1.0;
  std::string n_grid = "all";
  std::string r1_eta = "max";
  double r2_delta = 0.05;
  double four_phase_sink = 0.3;
  double four_phase_recency = 0.3;
  double bimodal_sink = 0.45;
  double bimodal_last = 0.45;
  double power_law_gamma = 1.0;
};

synth::SynthSweep to_sweep(const SynthSettings& s) {
  synth::SynthSweep sweep;
  sweep.profiles.clear();
  for (const std::string& name : s.profiles) sweep.profiles.push_back(synth::parse_profile(name));
  sweep.dims = s.dims;
  sweep.lengths = s.lengths;
  sweep.lambdas = s.lambdas;
  sweep.rho_0s = s.rho_0s;
  sweep.betas = s.betas;
  sweep.cvs = s.cvs;
  sweep.nu = s.nu;
  sweep.shapes.four_phase.sink_mass = s.four_phase_sink;
  sweep.shapes.four_phase.recency_mass = s.four_phase_recency;
  sweep.shapes.bimodal = {s.bimodal_sink, s.bimodal_last};
  sweep.shapes.power_law_exponent = s.power_law_gamma;
  sweep.analysis.every_n = s.n_grid == "all";
  sweep.analysis.r1_eta = s.r1_eta == "max" ? geometry::R1Eta::kMaxDeviation : geometry::R1Eta::kLagFitMae;
  sweep.analysis.r2_delta = s.r2_delta;
  return sweep;
}

std::string settings_line(const SynthSettings& s) {
  return fmt::format(
      "attngeom synth {} ({}) --seed {} --profiles {} --d {} --L {} --lambda {} --rho0 {} --beta {} --cv {} --nu {} "
      "--n-grid {} --r1-eta {} --r2-delta {} --four-phase-sink {} --four-phase-recency {} --bimodal-sink {} "
      "--bimodal-last {} --power-law-gamma {}",
      kVersion, kGitCommit, s.seed, fmt::join(s.profiles, ","), fmt::join(s.dims, ","), fmt::join(s.lengths, ","),
      fmt::join(s.lambdas, ","), fmt::join(s.rho_0s, ","), fmt::join(s.betas, ","), fmt::join(s.cvs, ","), s.nu,
      s.n_grid, s.r1_eta, s.r2_delta, s.four_phase_sink, s.four_phase_recency, s.bimodal_sink, s.bimodal_last,
      s.power_law_gamma);
}

// "1-4,1000-1023": the N at which `keep` holds, as ranges.
template <typename Points, typename Keep>
std::string n_ranges(const Points& points, Keep keep) {
  std::string out;
  for (std::size_t i = 0; i < points.size();) {
    if (!keep(points[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j + 1 < points.size() && keep(points[j + 1]) && points[j + 1].n == points[j].n + 1) ++j;
    out += fmt::format("{}{}", out.empty() ? "" : ",",
                       i == j ? fmt::format("{}", points[i].n) : fmt::format("{}-{}", points[i].n, points[j].n));
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

// Two lines per point: where separation holds and F at a few N, then where each
// reconstructed bound says anything, where it guarantees separation, and how much of the
// measurement it covers.
void print_summary(const synth::SynthPoint& p) {
  const geometry::RowAnalysis& a = p.analysis;
  std::string f_at;
  for (const geometry::SelectionMetrics& m : a.selection) {
    if (m.n == 1 || m.n == 2 || m.n == 4 || m.n == 16 || m.n == 128 || m.n == 512 || m.n + 2 == p.length + 1) {
      f_at += fmt::format(" F({})={:.2f}", m.n, m.f_score);
    }
  }
  const auto informative = [](const geometry::EnvelopePoint& e) { return !e.vacuous; };
  const auto separating = [](const geometry::EnvelopePoint& e) { return e.guarantees_separation; };
  fmt::print("point {} {} d={} L={} lambda={} rho_0={} beta={} cv={}: margin > 0 at N = {};{}\n", p.index,
             synth::profile_name(p.profile), p.values.dim, p.length, p.values.lambda, p.values.rho_0, p.values.beta,
             p.values.cv, n_ranges(a.selection, [](const geometry::SelectionMetrics& m) { return m.margin > 0.0; }),
             f_at);
  fmt::print(
      "  non-vacuous at N = R1 {} | R2 {} | R3 {}; guarantee separation at N = R1 {} | R2 {} | R3 {}; "
      "coverage R1 {:.3f} R2 {:.3f} R3 {:.3f}\n",
      n_ranges(a.r1, informative), n_ranges(a.r2.points, informative), n_ranges(a.r3, informative),
      n_ranges(a.r1, separating), n_ranges(a.r2.points, separating), n_ranges(a.r3, separating), a.r1_coverage.all,
      a.r2_coverage.all, a.r3_coverage.all);
}

// --out is new, empty, a previous synth output (its five CSVs and nothing else) or a run's
// synth/ folder, which the run's report draws: synth never mixes its files into a foreign folder.
void check_synth_out(const std::filesystem::path& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(out, ec);
  if (!fs::exists(status)) return;
  const std::string flag = "--out " + out.string();
  if (!fs::is_directory(status)) throw InputError(flag + ": exists and is not a directory");
  fs::path dir = out.lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "run/synth/"
  if (dir.filename() == "synth" && is_run_dir(dir.parent_path())) return;
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    std::ifstream file(entry.path());
    std::string first_line;
    std::getline(file, first_line);
    if (std::find(kSynthCsvFiles.begin(), kSynthCsvFiles.end(), name) == kSynthCsvFiles.end() ||
        !first_line.starts_with("# attngeom synth ")) {
      throw InputError(flag + ": holds " + name +
                       ", so it is neither empty nor a previous synth output nor a run's "
                       "synth/ folder; expected a new or empty directory");
    }
  }
  if (ec) throw InputError(flag + ": cannot list: " + ec.message());
}

void run_synth(const SynthSettings& settings) {
  check_synth_out(settings.out);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<synth::SynthPoint> points = synth::run_synth_sweep(to_sweep(settings), settings.seed);
  const std::vector<std::filesystem::path> files = write_synth_csv(settings.out, points, settings_line(settings));
  for (const synth::SynthPoint& p : points) print_summary(p);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("wrote {} files to {} ({}, {:.1f} s)\n", files.size(), settings.out, count_of(points.size(), "point"),
             seconds);
}

}  // namespace

void add_synth_command(CLI::App& app) {
  auto settings = std::make_shared<SynthSettings>();
  const synth::SynthSweep defaults;
  settings->dims = defaults.dims;
  settings->lengths = defaults.lengths;
  settings->lambdas = defaults.lambdas;
  settings->rho_0s = defaults.rho_0s;
  settings->betas = defaults.betas;
  settings->cvs = defaults.cvs;
  CLI::App* cmd = app.add_subcommand(
      "synth",
      "Synthetic heads (docs/method.md section 8): sweep attention profiles and value-model parameters; "
      "write the measured metrics, the reconstructed envelopes, their coverage and vacuity as CSV");
  cmd->add_option("--out", settings->out, "Directory for the CSV files (created if missing)")
      ->check(non_empty())
      ->required();
  cmd->add_option("--seed", settings->seed, "Seed of every random draw")->check(seed_value())->capture_default_str();
  cmd->add_option("--profiles", settings->profiles, "Attention profiles: four-phase, uniform, bimodal, power-law")
      ->delimiter(',')
      ->check(CLI::IsMember({"four-phase", "uniform", "bimodal", "power-law"}))
      ->capture_default_str();
  cmd->add_option("--d", settings->dims, "Value dimensions d to sweep")
      ->delimiter(',')
      ->check(integer_in(1, 1LL << 16))
      ->capture_default_str();
  cmd->add_option("--L", settings->lengths, "Sequence lengths L to sweep (M = L + 1 keys)")
      ->delimiter(',')
      ->check(integer_in(1, 1LL << 20))
      ->capture_default_str();
  // Finite, bounded draws: an infinite or huge norm would only surface as a non-finite value.
  cmd->add_option("--lambda", settings->lambdas, "Sink compressions nu_0 / nu to sweep")
      ->delimiter(',')
      ->check(number_in(0.0, 1e3))
      ->capture_default_str();
  cmd->add_option("--rho0", settings->rho_0s, "Sink cosines rho_0 to sweep")
      ->delimiter(',')
      ->check(number_in(-1.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--beta", settings->betas, "Content cosine decays beta to sweep (inf: independent directions)")
      ->delimiter(',')
      ->check(number_in(0.0, INFINITY))
      ->capture_default_str();
  cmd->add_option("--cv", settings->cvs, "Coefficients of variation of content norms to sweep")
      ->delimiter(',')
      ->check(number_in(0.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--nu", settings->nu, "Mean content value norm")->check(number_in(1e-6, 1e6))->capture_default_str();
  cmd->add_option("--n-grid", settings->n_grid, "N values: 'all' (1..M-1) or 'default' (docs/method.md section 2)")
      ->check(CLI::IsMember({"all", "default"}))
      ->capture_default_str();
  cmd->add_option("--r1-eta", settings->r1_eta,
                  "R1's cosine-deviation bound: max (provable) or mae (typical), as in analyze")
      ->check(CLI::IsMember({"max", "mae"}))
      ->capture_default_str();
  cmd->add_option("--r2-delta", settings->r2_delta, "Stated violation probability of R2 at each N")
      ->check(number_in(1e-12, 1.0 - 1e-12))
      ->capture_default_str();
  cmd->add_option("--four-phase-sink", settings->four_phase_sink, "Four-phase profile: sink mass")
      ->check(number_in(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--four-phase-recency", settings->four_phase_recency, "Four-phase profile: recency-tail mass")
      ->check(number_in(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--bimodal-sink", settings->bimodal_sink, "Bimodal profile: sink mass")
      ->check(number_in(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--bimodal-last", settings->bimodal_last, "Bimodal profile: last-token mass")
      ->check(number_in(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--power-law-gamma", settings->power_law_gamma, "Power-law profile: exponent gamma of (i+1)^-gamma")
      ->check(number_in(0.0, 1e3))
      ->capture_default_str();
  cmd->callback([settings] { run_synth(*settings); });
}

}  // namespace attngeom::cli
