#pragma once
// Each row's attention mass statistics (docs/method.md section 3) and the taxonomy's
// magnitudes (section 6) as plain structs and functions of pointers that the CPU path and a
// GPU kernel both run (C++17, no library types), so that both give the same bits (the
// entropy up to the last bits of each build's log).
#include <cmath>
#include <cstddef>

#include "util/host_device.h"

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

// ||alpha_0 v_0|| (sink), ||alpha_L v_L|| (last token), ||sum_{0<i<L} alpha_i v_i|| (rest).
// With M = 1 the sink is also the last token and the rest is 0.
struct HeadMagnitudes {
  double sink = 0.0;
  double last = 0.0;
  double rest = 0.0;
};

// alpha [M] by key, a validated softmax row; descending: its min(top_k, M) largest weights,
// largest first.
ATTNGEOM_HD inline MassStats mass_step(const float* alpha, std::size_t keys, const float* descending,
                                       const MassOptions& options) {
  MassStats out;
  out.sink_mass = alpha[0];
  out.last_mass = alpha[keys - 1];
  double entropy = 0.0;
  for (std::size_t k = 0; k < keys; ++k) {
    const float a = alpha[k];
    if (a > 0.0f) entropy -= static_cast<double>(a) * log(static_cast<double>(a));  // 0 log 0 = 0
  }
  out.normalised_entropy = keys > 1 ? entropy / log(static_cast<double>(keys)) : 0.0;
  const std::size_t window = options.recency_window < keys ? options.recency_window : keys;
  for (std::size_t k = keys - window; k < keys; ++k) out.recency_mass += alpha[k];
  const std::size_t top = options.top_k < keys ? options.top_k : keys;
  for (std::size_t k = 0; k < top; ++k) out.top_k_mass += descending[k];
  // Shares of a distribution: a float row summing to 1 + 4e-8 must not report more than all.
  out.recency_mass = 1.0 < out.recency_mass ? 1.0 : out.recency_mass;  // std::min(x, 1.0)
  out.top_k_mass = 1.0 < out.top_k_mass ? 1.0 : out.top_k_mass;
  return out;
}

// ||a v|| of v [dim], in double.
ATTNGEOM_HD inline double norm_of_scaled(const float* v, std::size_t dim, double a) {
  double sq = 0.0;
  for (std::size_t t = 0; t < dim; ++t) sq += (a * v[t]) * (a * v[t]);
  return sqrt(sq);
}

// Coordinate t of sum_{0<i<L} alpha_i v_i over values [M, dim], in ascending i.
ATTNGEOM_HD inline double rest_coordinate(const float* alpha, const float* values, std::size_t keys, std::size_t dim,
                                          std::size_t t) {
  double sum = 0.0;
  for (std::size_t i = 1; i + 1 < keys; ++i) sum += static_cast<double>(alpha[i]) * values[i * dim + t];
  return sum;
}

// The magnitudes from rest [dim], each coordinate as rest_coordinate gives it.
ATTNGEOM_HD inline HeadMagnitudes magnitudes_step(const float* alpha, const float* values, std::size_t keys,
                                                  std::size_t dim, const double* rest) {
  HeadMagnitudes m;
  m.sink = norm_of_scaled(values, dim, alpha[0]);
  m.last = norm_of_scaled(values + (keys - 1) * dim, dim, alpha[keys - 1]);
  double sq = 0.0;
  for (std::size_t t = 0; t < dim; ++t) sq += rest[t] * rest[t];
  m.rest = sqrt(sq);
  return m;
}

}  // namespace attngeom::geometry
