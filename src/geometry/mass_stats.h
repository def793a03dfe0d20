#pragma once
// Per-row attention mass statistics, docs/method.md section 3.
#include <cstddef>
#include <span>

namespace attngeom::geometry {

struct MassOptions {
  std::size_t recency_window = 16;  // w: the recency mass sums the last w keys (docs/method.md section 3)
  std::size_t top_k = 4;            // k of the top-k mass; 4 is the end of the seed's small-N regime [1, 4]
};

struct MassStats {
  double sink_mass = 0.0;           // a_0 = alpha_0
  double last_mass = 0.0;           // a_L = alpha_{M-1} (the query itself under causal attention)
  double normalised_entropy = 0.0;  // -sum alpha log alpha / log M; 0 when M = 1
  double recency_mass = 0.0;        // sum of alpha over the last min(w, M) keys, at most 1
  double top_k_mass = 0.0;          // sum of the min(k, M) largest alpha, at most 1
};

// alpha: [M], a validated softmax row.
MassStats mass_stats(std::span<const float> alpha, const MassOptions& options = {});

}  // namespace attngeom::geometry
