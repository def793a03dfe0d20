#pragma once
// The value geometry of many rows over one kv head's values: a sequence's captured rows end at
// ascending keys over the same values, so each key's unit vector, its cosine with the sink and
// every cosine of the lag band are computed once for all rows (O(T tau_max d) in all instead of
// O(M tau_max d) per row). Each row's ValueGeometry is analyze_values of that row alone, bit
// for bit: each row sums its own terms in the order a row alone sums them.
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/lag_band.h"
#include "geometry/row_analysis.h"

namespace attngeom::geometry {

class ValueRows {
 public:
  // longest: the longest row (keys 0..keys.back() - 1, any valid alpha); keys: each row's M,
  // ascending; options as analyze_values takes them (kept by reference, as is longest).
  ValueRows(const HeadRowView& longest, std::span<const std::size_t> keys, const RowAnalysisOptions& options);

  // The lag band in independent parts, each to compute once, in any order, on any thread.
  std::size_t band_parts() const { return band_.parts(); }
  void compute_band(std::size_t part) { band_.compute(part); }
  // After every part: each row's band sums.
  void finish_band();
  // After finish_band: analyze_values of row r (keys 0..keys[r] - 1); any order, any thread.
  ValueGeometry row(std::size_t r) const;

 private:
  std::vector<std::size_t> keys_;  // [rows]
  const RowAnalysisOptions& options_;
  UnitRows units_;                     // of the longest row
  std::vector<double> sink_cosines_;   // [M] sink_cosines(units_)
  std::vector<std::size_t> max_lags_;  // [rows] each row's tau_max
  LagBandCosines band_;                // reads units_
  std::vector<LagBandSums> sums_;      // [rows] after finish_band
};

}  // namespace attngeom::geometry
