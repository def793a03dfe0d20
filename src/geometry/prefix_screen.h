#pragma once
// The maximum cosine deviation (cosine_model.h) of several rows that read nested prefixes of
// one value array: the captured rows of one kv head, row r over keys [0, keys[r]). One pass of
// pair products over the longest prefix serves them all. Each tile keeps, per lag, its largest
// and smallest screened cosine (and those of the sink's pairs); a row bounds every tile's
// screened |delta| from them against its own model, then recomputes in double the pairs of
// the tiles that may hold its maximum, as screened_cosine_deviation does for one row. A row
// whose maximum too many tiles may hold takes screened_cosine_deviation on its own prefix.
// Either way each max_abs equals screened_cosine_deviation's on that row's prefix, bit for bit.
#include <cstddef>
#include <span>
#include <vector>

#include "geometry/cosine_model.h"
#include "geometry/pair_products.h"
#include "geometry/value_diagnostics.h"

namespace attngeom::geometry {

// units: the longest prefix's (keys.back() keys); keys ascending, each >= 1; models[r]: row r's.
std::vector<double> prefix_max_deviations(const UnitRows& units, std::span<const std::size_t> keys,
                                          std::span<const CosineModel> models, const PairProducts& products);

// The first `keys` of `units`, as unit_rows computes them for that prefix.
UnitRows prefix_units(const UnitRows& units, std::size_t keys);

}  // namespace attngeom::geometry
