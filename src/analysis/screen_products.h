#pragma once
// The oneDNN screens of ops/pair_product_tiles.h behind geometry's PairProducts interface,
// and analyze's choice among them.
#include <cstddef>
#include <memory>

#include "geometry/pair_products.h"

namespace attngeom {

// Null where Int8Tiles::available(dim) is false (no VNNI, or d too large).
std::unique_ptr<geometry::PairProducts> make_int8_pair_products(std::size_t dim);

// Null where Bf16Tiles::available(dim) is false (no oneDNN bf16 matmul on this CPU).
std::unique_ptr<geometry::PairProducts> make_bf16_pair_products(std::size_t dim);

// analyze's choice: bf16 on AMX, where its tiles need no rescaling pass; int8 with VNNI alone,
// where bf16 runs at a fraction of int8's rate; null (the caller keeps the fp32 screen) with
// neither.
std::unique_ptr<geometry::PairProducts> make_screen_pair_products(std::size_t dim);

}  // namespace attngeom
