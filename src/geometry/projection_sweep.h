#pragma once
// Grows s_N = sum_{i in I_N} w_i x_i one key at a time and keeps ||s_N||^2 and <x_k, s_N>
// for every key k (docs/method.md section 2, "Complexity"):
//   <x_k, s_N> = <x_k, s_{N-1}> + w_{i_N} <x_k, x_{i_N}>,
//   ||s_N||^2  = ||s_{N-1}||^2 + w_{i_N} (2 <x_{i_N}, s_{N-1}> + w_{i_N} ||x_{i_N}||^2).
// The vectors x_k are known only through Gram columns, so the same sweep serves the measured
// values (columns of V V^T) and the cosine model of the reconstructed bounds.
#include <cstddef>
#include <span>
#include <vector>

namespace attngeom::geometry {

class ProjectionSweep {
 public:
  explicit ProjectionSweep(std::span<const double> weights);  // [M] w_k

  // Adds `key` to s; column[k] = <x_k, x_key> for every key k. O(M).
  void add(std::size_t key, std::span<const double> column);

  double norm2() const { return norm2_; }                 // ||s_N||^2
  std::span<const double> dots() const { return dots_; }  // [M] <x_k, s_N>

 private:
  std::span<const double> weights_;
  std::vector<double> dots_;
  double norm2_ = 0.0;
};

// D_k^2 = ||w_k x_k - s_N||^2 = ||s_N||^2 + w_k (w_k ||x_k||^2 - 2 <x_k, s_N>), clamped at 0
// against rounding.
inline double squared_distance(double weight, double sq_norm, double s_norm2, double dot) {
  const double d2 = s_norm2 + weight * (weight * sq_norm - 2.0 * dot);
  return d2 > 0.0 ? d2 : 0.0;
}

}  // namespace attngeom::geometry
