#pragma once
// The O(M tau_max d) part of the lag curve (value_diagnostics.h): every cosine
// <u_i, u_{i+tau}> of content keys 1 <= i < i + tau <= L, tau <= tau_max, summed by lag.
// Each cosine is a float dot product of the units rounded to float (within
// 2^-23 + gamma_d(2^-24) of the exact one); the sums by lag are double.
// Internal to value_diagnostics.cc.
#include <cstddef>
#include <vector>

#include "geometry/value_diagnostics.h"

namespace attngeom::geometry {

struct LagBandSums {
  std::vector<double> sums;        // [tau_max + 1] sum of the cosines at lag tau (index 0 unused)
  std::vector<std::size_t> pairs;  // [tau_max + 1] pairs behind each sum: both vectors non-zero
  std::size_t negative_pairs = 0;  // pairs with a negative cosine
};

// Each lag's sum runs over i in 16 strands (i mod 16), each in ascending i, added up at the end.
LagBandSums lag_band_sums(const UnitRows& units, std::size_t max_lag);

}  // namespace attngeom::geometry
