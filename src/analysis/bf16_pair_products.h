#pragma once
// The cosine-deviation screen of bf16 runs (geometry/pair_products.h): unit vectors rounded to
// bf16 and multiplied on AMX through oneDNN matmul with fp32 accumulation, about 5x the fp32
// screen. The maximum deviation stays exact (pairs near it are recomputed in double).
#include <cstddef>
#include <memory>

#include "geometry/pair_products.h"

namespace attngeom {

std::unique_ptr<geometry::PairProducts> make_bf16_pair_products(std::size_t dim);

}  // namespace attngeom
