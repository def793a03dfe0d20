#pragma once
// The ablation behind `attngeom synth` (docs/method.md section 8): synthetic heads over a Cartesian
// grid of attention profiles and value-model parameters, each analysed like a captured row
// (analyze_row), so the measured curves, the reconstructed envelopes, their coverage and
// their vacuity can be compared across assumptions.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "geometry/row_analysis.h"
#include "synth/synthetic.h"

namespace attngeom::synth {

struct SynthSweep {
  // The seed's ablation: the four profiles at one value model.
  std::vector<ProfileKind> profiles = {ProfileKind::kFourPhase, ProfileKind::kUniform, ProfileKind::kBimodal,
                                       ProfileKind::kPowerLaw};
  std::vector<std::size_t> dims = {128};      // d
  std::vector<std::size_t> lengths = {1023};  // L; M = L + 1 keys
  std::vector<double> lambdas = {0.2};
  std::vector<double> rho_0s = {0.1};
  std::vector<double> betas = {0.1};
  std::vector<double> cvs = {0.03};
  double nu = 1.0;
  ProfileSpec shapes;  // four-phase, bimodal and power-law parameters (kind is ignored)
  geometry::RowAnalysisOptions analysis = every_n_analysis();

  static geometry::RowAnalysisOptions every_n_analysis() {
    geometry::RowAnalysisOptions o;
    o.every_n = true;
    return o;
  }
};

struct SynthPoint {
  std::size_t index = 0;
  ProfileKind profile = ProfileKind::kFourPhase;
  std::size_t length = 0;  // L
  ValueModelSpec values;
  std::uint64_t seed = 0;  // of this head, derived from the sweep's seed and the index
  geometry::RowAnalysis analysis;
};

// Points in the order profile (fastest), cv, beta, rho_0, lambda, L, d. InputError on an
// empty list or an infeasible value model.
std::vector<SynthPoint> run_synth_sweep(const SynthSweep& sweep, std::uint64_t seed);

}  // namespace attngeom::synth
