#pragma once
// The maximum cosine deviation max |delta| (cosine_model.h) of many rows over one kv head's
// values, rows ending at ascending keys, without scanning every pair of every row. A content
// pair's delta depends on the pair only through its cosine and its lag, and a rounded
// difference is monotone in the cosine, so a row's maximum is met at the largest or the
// smallest cosine of some lag among its pairs (the sink's pairs against rho_0 alike).
//
// The cosines come screened, tile by tile, from a PairProducts kernel (O(T^2 d) at its speed
// per kv head), walked in order of the later key as running extrema by lag. A pair is
// recomputed in double (unit_pair_cosine, as screened_cosine_deviation does) only when its
// screened cosine comes within twice the kernel's error bound of its lag's screened running
// maximum or minimum: the pair holding a row's true extreme at a lag always does, so the exact
// running extrema of the recomputed pairs give each row's max_abs exactly, bit for bit, at
// O(M) per row. Any split of the pairs among parts keeps this (each part screens against its
// own running extrema, which only admits more pairs), so parts are independent.
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "geometry/cosine_model.h"
#include "geometry/pair_products.h"

namespace attngeom::geometry {

class DeviationMaxima {
 public:
  // units: the longest row's (kept by reference); keys: each row's M, ascending, the last
  // units.keys(); products: the screen's kernel (kept by reference). A loaded row's tiles may
  // hold scratch of their own, so parts that run at once each load the units.
  DeviationMaxima(const UnitRows& units, std::span<const std::size_t> keys, const PairProducts& products);

  // Independent parts (part p takes the diagonals of tiles p and blocks - 1 - p, p + parts and
  // blocks - 1 - p - parts, ..., so that parts hold about as many tiles), each to compute
  // once, in any order, on any thread, given every row's model.
  std::size_t parts() const { return parts_; }
  void compute(std::size_t part, std::span<const CosineModel> models);
  // After every part: each row's max |delta| over its pairs of non-zero vectors (0 without any).
  std::vector<double> maxima() const;

 private:
  // The units loaded for a part, from those no running part holds, or loaded anew; and back.
  std::unique_ptr<LoadedUnits> take_loaded();
  void put_back(std::unique_ptr<LoadedUnits> loaded);

  const UnitRows& units_;
  std::vector<std::size_t> keys_;  // [rows]
  const PairProducts& products_;
  std::mutex idle_mutex_;
  std::vector<std::unique_ptr<LoadedUnits>> idle_;  // loaded units that no part holds
  float margin_;        // twice the screen's error bound, with the float threshold's rounding
  std::size_t blocks_;  // tiles along a side
  std::size_t parts_;
  std::vector<float> key_mask_;  // [T] 0 where u_l is defined, NaN where not
  std::vector<double> partial_;  // [parts, rows] each part's maximum of each row
};

}  // namespace attngeom::geometry
