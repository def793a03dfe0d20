#pragma once
// The O(M tau_max d) part of the lag curve (value_diagnostics.h): every cosine
// <u_i, u_{i+tau}> of content keys 1 <= i < i + tau <= L, tau <= tau_max, summed by lag.
// Each cosine is a float dot product of the units rounded to float (within
// 2^-23 + gamma_d(2^-24) of the exact one); the sums by lag are double.
// Internal to the value geometry (value_diagnostics.cc, value_rows.cc).
#include <cstddef>
#include <memory>
#include <span>
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

// The lag curve and its fit from a row's band sums (value_diagnostics.h).
LagCurve lag_curve_from_sums(const LagBandSums& band, std::size_t max_lag, const LagCurveOptions& options);

class TransposedUnits;

// The band's cosines one by one, for rows of many lengths over the same keys (a sequence's
// captured rows): those of the longest row, computed once, of which each shorter row sums its
// own pairs.
class LagBandCosines {
 public:
  // units: the longest row's (kept by reference); max_lag: the most any row reads.
  LagBandCosines(const UnitRows& units, std::size_t max_lag);
  ~LagBandCosines();
  LagBandCosines(const LagBandCosines&) = delete;
  LagBandCosines& operator=(const LagBandCosines&) = delete;

  // Independent parts (ranges of keys), each to compute once, in any order, on any thread.
  std::size_t parts() const;
  void compute(std::size_t part);

  // After every part: lag_band_sums(the units of keys 0..keys[r] - 1, max_lags[r]) of each row
  // r, bit for bit; keys ascending, at most the longest's.
  std::vector<LagBandSums> sums_of_rows(std::span<const std::size_t> keys, std::span<const std::size_t> max_lags) const;

 private:
  static constexpr std::size_t kBlocksPerPart = 64;  // blocks of 16 keys
  const UnitRows& units_;
  std::size_t length_;   // L of the longest row
  std::size_t max_lag_;  // tau_max
  std::unique_ptr<const TransposedUnits> transposed_;
  std::vector<float> cosines_;  // [tau_max + 1, L + 1] <u_i, u_{i + tau}>; 0 where i + tau > L
};

}  // namespace attngeom::geometry
