// The synth sweep and its CSV files: reproducible, complete, NaN-free.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/synth_csv.h"
#include "geometry/linalg.h"
#include "synth/synth_sweep.h"
#include "util/error.h"

namespace attngeom::synth {
namespace {

SynthSweep small_sweep() {
  SynthSweep sweep;
  sweep.profiles = {ProfileKind::kFourPhase, ProfileKind::kPowerLaw};
  sweep.dims = {32};
  sweep.lengths = {63};
  sweep.betas = {0.3, std::numeric_limits<double>::infinity()};
  sweep.rho_0s = {0.0};
  return sweep;
}

std::vector<std::string> lines_of(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(SynthSweep, PointsAreReproducibleAndOrdered) {
  const std::vector<SynthPoint> a = run_synth_sweep(small_sweep(), 5);
  const std::vector<SynthPoint> b = run_synth_sweep(small_sweep(), 5);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].profile, ProfileKind::kFourPhase);
  EXPECT_EQ(a[1].profile, ProfileKind::kPowerLaw);
  EXPECT_EQ(a[2].values.beta, std::numeric_limits<double>::infinity());
  EXPECT_NE(a[0].seed, a[1].seed);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].seed, b[i].seed);
    ASSERT_EQ(a[i].analysis.selection.size(), 63u);  // every N by default
    EXPECT_EQ(a[i].analysis.selection[10].r_min, b[i].analysis.selection[10].r_min);
    EXPECT_EQ(a[i].analysis.r1_coverage.all, 1.0);  // R1 with the measured max deviation is a theorem
  }
}

TEST(SynthSweep, RejectsEmptyListsAndInfeasibleModels) {
  SynthSweep empty = small_sweep();
  empty.cvs.clear();
  EXPECT_THROW(run_synth_sweep(empty, 1), InputError);
  SynthSweep infeasible = small_sweep();
  infeasible.betas = {0.01};
  infeasible.rho_0s = {0.95};
  infeasible.lengths = {1023};
  EXPECT_THROW(run_synth_sweep(infeasible, 1), InputError);
  // Independent directions (beta = inf) with rho_0 above 1/sqrt(L): the hint is the bound,
  // not "raise beta"; at the bound the model is feasible.
  SynthSweep independent = small_sweep();
  independent.betas = {std::numeric_limits<double>::infinity()};
  independent.rho_0s = {0.2};  // L = 63: 1/sqrt(63) = 0.126
  try {
    run_synth_sweep(independent, 1);
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("at most 1/sqrt(L) = 0.125988"), std::string::npos) << e.what();
  }
  independent.rho_0s = {0.125};
  EXPECT_NO_THROW(run_synth_sweep(independent, 1));
}

// The sink-bordered identity [[1, r 1^T], [r 1, I_L]] is PSD exactly when L r^2 <= 1. At
// r = 0.2, L = 63 (1/r^2 = 25 <= L) the pivoted LDL^T passes a pivot through ~0, which once
// slipped through as "PSD" with a garbage factor.
TEST(PsdFactor, BorderedIdentityIsRefusedExactlyWhenIndefinite) {
  constexpr std::size_t kL = 63, kN = kL + 1;
  const double bound = 1.0 / std::sqrt(static_cast<double>(kL));
  for (const double r : {0.05, 0.12, bound * (1 - 1e-9), 0.13, 0.2, 0.25, 0.5}) {
    std::vector<double> a(kN * kN, 0.0), factor(kN * kN);
    for (std::size_t i = 0; i < kN; ++i) a[i * kN + i] = 1.0;
    for (std::size_t i = 1; i < kN; ++i) a[i] = a[i * kN] = r;
    const bool psd = geometry::psd_factor(a, kN, 1e-9, factor);
    EXPECT_EQ(psd, r <= bound) << "r = " << r;
    if (!psd) continue;
    double worst = 0.0;  // factor * factor^T against a
    for (std::size_t i = 0; i < kN; ++i) {
      for (std::size_t j = 0; j < kN; ++j) {
        double sum = 0.0;
        for (std::size_t k = 0; k < kN; ++k) sum += factor[i * kN + k] * factor[j * kN + k];
        worst = std::max(worst, std::abs(sum - a[i * kN + j]));
      }
    }
    EXPECT_LT(worst, 1e-9) << "r = " << r;
  }
}

TEST(SynthCsv, FilesHoldEveryRowAndNoNaN) {
  const std::vector<SynthPoint> points = run_synth_sweep(small_sweep(), 5);
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "attngeom_synth_csv_test";
  std::filesystem::remove_all(dir);
  const std::vector<std::filesystem::path> files = write_synth_csv(dir, points, "test settings");
  ASSERT_EQ(files.size(), 5u);
  const std::size_t n_rows = 4 * 63;
  EXPECT_EQ(lines_of(dir / "points.csv").size(), 2 + 4u);
  EXPECT_EQ(lines_of(dir / "metrics.csv").size(), 2 + n_rows);
  EXPECT_EQ(lines_of(dir / "envelopes.csv").size(), 2 + 3 * n_rows);
  EXPECT_EQ(lines_of(dir / "separation.csv").size(), 2 + n_rows);
  EXPECT_EQ(lines_of(dir / "coverage.csv").size(), 2 + 3 * 4u);
  for (const std::filesystem::path& f : files) {
    const std::vector<std::string> lines = lines_of(f);
    EXPECT_EQ(lines.front(), "# test settings");
    for (const std::string& line : lines) EXPECT_EQ(line.find("nan"), std::string::npos) << f << ": " << line;
  }
  EXPECT_NE(lines_of(dir / "envelopes.csv")[2].find("R1-reconstructed-deterministic"), std::string::npos);
  EXPECT_THROW(write_synth_csv(dir / "points.csv" / "below-a-file", points, "x"), InputError);
}

}  // namespace
}  // namespace attngeom::synth
