#pragma once
// Synthetic heads of each taxonomy type, built from docs/method.md section 6's descriptions; the
// parameters are drawn from ranges so that no two heads are alike.
//   Retriever: the last token takes most of the mass (0.5-0.7) at full norm.
//   Mixer: a large but compressed sink (mass 0.4-0.6, lambda 0.05-0.15) against slowly
//          decaying, coherent content (beta 0.01-0.03) that outweighs it once enough joins s_N.
//   Reset: the sink takes nearly all the mass (0.85-0.95) at a moderate norm (lambda 0.4-0.8).
#include <cstddef>
#include <random>

#include "stats/taxonomy.h"
#include "synth/synthetic.h"

namespace attngeom::synth {

struct PlantedHeadSpec {
  ProfileSpec profile;  // bimodal: sink + last, the rest spread over the content keys
  ValueModelSpec values;
};

// InputError for kUnclassified (there is nothing to plant).
PlantedHeadSpec planted_head_spec(stats::HeadType type, std::size_t dim, std::mt19937_64& rng);

}  // namespace attngeom::synth
