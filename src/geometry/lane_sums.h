#pragma once
// ||v||^2 of a value vector in one fixed order, shared by every part of the geometry that needs
// it (unit vectors, norms, the selection metrics) and by a GPU thread, so that all agree to
// the last bit. C++17: nvcc compiles it for the device too.
#include <cstddef>

#include "util/host_device.h"

namespace attngeom::geometry {

// ||v||^2 of d floats in double, summed in eight interleaved lanes combined pairwise: a fixed
// order that the CPU vectorises and a GPU thread repeats bit for bit.
ATTNGEOM_HD inline double squared_norm_in_lanes(const float* v, std::size_t dim) {
  constexpr std::size_t kLanes = 8;
  double lane[kLanes] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  std::size_t t = 0;
  for (; t + kLanes <= dim; t += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) {
      const double x = v[t + j];
      lane[j] += x * x;
    }
  }
  for (std::size_t j = 0; t + j < dim; ++j) {
    const double x = v[t + j];
    lane[j] += x * x;
  }
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

}  // namespace attngeom::geometry
