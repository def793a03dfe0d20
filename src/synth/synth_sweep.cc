#include "synth/synth_sweep.h"

#include <random>
#include <utility>

#include "util/error.h"

namespace attngeom::synth {
namespace {

// SplitMix64: independent, reproducible per-point seeds from one sweep seed.
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<SynthPoint> run_synth_sweep(const SynthSweep& sweep, std::uint64_t seed) {
  if (sweep.profiles.empty() || sweep.dims.empty() || sweep.lengths.empty() || sweep.lambdas.empty() ||
      sweep.rho_0s.empty() || sweep.betas.empty() || sweep.cvs.empty()) {
    throw InputError("synth: every swept parameter needs at least one value");
  }
  std::vector<SynthPoint> points;
  for (const std::size_t dim : sweep.dims) {
    for (const std::size_t length : sweep.lengths) {
      if (length < 1) throw InputError("synth: L must be >= 1");
      for (const double lambda : sweep.lambdas) {
        for (const double rho_0 : sweep.rho_0s) {
          for (const double beta : sweep.betas) {
            for (const double cv : sweep.cvs) {
              const ValueModelSpec values{dim, sweep.nu, cv, lambda, rho_0, beta};
              const ValueSampler sampler(values, length + 1);  // factored once for all profiles
              for (const ProfileKind profile : sweep.profiles) {
                SynthPoint point;
                point.index = points.size();
                point.profile = profile;
                point.length = length;
                point.values = values;
                point.seed = mix_seed(seed, point.index);
                ProfileSpec spec = sweep.shapes;
                spec.kind = profile;
                std::mt19937_64 rng(point.seed);
                const SyntheticHead head = synthetic_head(attention_profile(spec, length + 1), sampler, rng);
                point.analysis = geometry::analyze_row(head.view(), sweep.analysis);
                points.push_back(std::move(point));
              }
            }
          }
        }
      }
    }
  }
  return points;
}

}  // namespace attngeom::synth
