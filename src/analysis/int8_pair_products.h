#pragma once
// The cosine-deviation screen of analyze (geometry/pair_products.h): each unit vector
// quantised to int8 with its own scale, their products exact in int32 through oneDNN matmul
// (VNNI, or AMX where present), about 4x the fp32 screen. The screen only picks the pairs that
// may hold the maximum deviation, which are recomputed in double, so nothing analyze writes
// depends on this kernel (sigma2 does not read the products at all).
#include <cstddef>
#include <memory>

#include "geometry/pair_products.h"

namespace attngeom {

// Null (the caller keeps the fp32 screen) where the CPU has no int8 dot-product instructions
// (VNNI): oneDNN's fallback there sums pairs of u8 x s8 products in saturating int16, which
// would break the error bound; null too for d > 1040, where an int32 product of two int8
// vectors may no longer convert to float exactly.
std::unique_ptr<geometry::PairProducts> make_int8_pair_products(std::size_t dim);

}  // namespace attngeom
