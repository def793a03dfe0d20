// The synth sweep and its CSV files: reproducible, complete, NaN-free.
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "geometry/synth_csv.h"
#include "geometry/synth_sweep.h"
#include "util/error.h"

namespace attngeom::geometry {
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
}  // namespace attngeom::geometry
