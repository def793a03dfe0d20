#include "synth/planted_heads.h"

#include "util/error.h"

namespace attngeom::synth {

PlantedHeadSpec planted_head_spec(stats::HeadType type, std::size_t dim, std::mt19937_64& rng) {
  const auto uniform = [&rng](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  PlantedHeadSpec spec;
  spec.profile.kind = ProfileKind::kBimodal;
  spec.values.dim = dim;
  spec.values.cv = uniform(0.02, 0.05);  // the seed's range
  switch (type) {
    case stats::HeadType::kRetriever:
      spec.profile.bimodal = {uniform(0.05, 0.15), uniform(0.5, 0.7)};
      spec.values.lambda = uniform(0.1, 0.3);
      spec.values.beta = uniform(0.05, 0.2);
      break;
    case stats::HeadType::kMixer:
      spec.profile.bimodal = {uniform(0.4, 0.6), uniform(0.01, 0.03)};
      spec.values.lambda = uniform(0.05, 0.15);
      spec.values.beta = uniform(0.01, 0.03);
      break;
    case stats::HeadType::kReset:
      spec.profile.bimodal = {uniform(0.85, 0.95), uniform(0.005, 0.02)};
      spec.values.lambda = uniform(0.4, 0.8);
      spec.values.beta = uniform(0.05, 0.2);
      break;
    case stats::HeadType::kUnclassified:
      throw InputError("planted heads: 'unclassified' is not a head type to plant");
  }
  // Small enough to be feasible for these decays at a few hundred keys.
  spec.values.rho_0 = uniform(0.0, 0.1);
  return spec;
}

}  // namespace attngeom::synth
