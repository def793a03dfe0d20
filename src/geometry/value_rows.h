#pragma once
// The value geometry of many rows over one kv head's values: a sequence's captured rows end at
// ascending keys over the same values, so each key's unit vector, its cosine with the sink and
// every cosine of the lag band are computed once for all rows (O(T tau_max d) in all instead of
// O(M tau_max d) per row). Each row's ValueGeometry is analyze_values of that row alone, bit
// for bit: each row sums its own terms in the order a row alone sums them.
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "geometry/deviation_maxima.h"
#include "geometry/deviation_sums.h"
#include "geometry/lag_band.h"
#include "geometry/row_analysis.h"

namespace attngeom::geometry {

// How the rows' maximum cosine deviations are found, where the options ask for them: each row
// screened on its own (screened_cosine_deviation), or every row at once from running extrema
// by lag (deviation_maxima.h); the same bits either way. Automatic: the shared maxima where the
// rows' own screens would visit many times the pairs of the longest row.
enum class DeviationMethod { kAutomatic, kPerRow, kSharedMaxima };

class ValueRows {
 public:
  // longest: the longest row (keys 0..keys.back() - 1, any valid alpha); keys: each row's M,
  // ascending; options as analyze_values takes them (kept by reference, as is longest).
  ValueRows(const HeadRowView& longest, std::span<const std::size_t> keys, const RowAnalysisOptions& options,
            DeviationMethod method = DeviationMethod::kAutomatic);

  // The lag band in independent parts, each to compute once, in any order, on any thread.
  std::size_t band_parts() const { return band_.parts(); }
  void compute_band(std::size_t part) { band_.compute(part); }
  // After every part: each row's band sums.
  void finish_band();
  // After finish_band: analyze_values of row r (keys 0..keys[r] - 1); any order, any thread;
  // with deviation_parts() > 0, all but deviation.max_abs, which the steps below add.
  ValueGeometry row(std::size_t r) const;

  // With the shared maxima: their parts (else 0), each once, in any order, on any thread,
  // given every row's geometry from row(); then finish_deviations sets each row's max_abs.
  std::size_t deviation_parts() const { return maxima_ ? maxima_->parts() : 0; }
  void compute_deviations(std::size_t part, std::span<const ValueGeometry> rows);
  void finish_deviations(std::span<ValueGeometry> rows) const;

 private:
  std::vector<std::size_t> keys_;  // [rows]
  const RowAnalysisOptions& options_;
  UnitRows units_;                                        // of the longest row
  std::vector<double> sink_cosines_;                      // [M] sink_cosines(units_)
  std::vector<std::size_t> max_lags_;                     // [rows] each row's tau_max
  LagBandCosines band_;                                   // reads units_
  std::vector<LagBandSums> sums_;                         // [rows] after finish_band
  std::optional<DeviationMaxima> maxima_;                 // reads units_; with the shared maxima only
  std::optional<SharedDeviationSquareSums> square_sums_;  // reads units_; where the deviations are read
};

}  // namespace attngeom::geometry
