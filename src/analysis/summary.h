#pragma once
// Distribution summaries over samples: mean, standard deviation and quantiles,
// computed exactly from all values in a fixed order (so reruns are bit-identical).
#include <cstddef>
#include <span>
#include <vector>

namespace attngeom {

struct Summary {
  std::size_t count = 0;  // finite values used; NaN values (undefined metrics) are left out
  double mean = 0;
  double std = 0;  // population standard deviation
  double q10 = 0, q25 = 0, q50 = 0, q75 = 0, q90 = 0;
};

// Quantiles by linear interpolation between order statistics (numpy's default).
// An empty (or all-NaN) input gives count 0 and NaN everywhere else.
Summary summarize(std::span<const double> values);

// Mean of the finite values, NaN when there are none.
double finite_mean(std::span<const double> values);

}  // namespace attngeom
