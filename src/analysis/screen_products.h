#pragma once
// The cosine-deviation screens of analyze (geometry/pair_products.h): the products of a row's
// unit vectors through oneDNN matmul, in a format coarser than fp32 and faster. The screen only
// picks the pairs that may hold the maximum deviation, which are recomputed in double, so
// nothing analyze writes depends on the kernel (sigma2 does not read the products at all).
//   int8: each vector quantised with its own scale, products exact in int32 (VNNI or AMX),
//         then rescaled; an outlying coordinate coarsens its vector's whole grid.
//   bf16: each coordinate rounded to bf16, products accumulated in fp32 straight into the
//         tile (AMX); relative per coordinate, so outliers cost nothing.
#include <cstddef>
#include <memory>

#include "geometry/pair_products.h"

namespace attngeom {

// Null where the CPU has no int8 dot-product instructions (VNNI): oneDNN's fallback there sums
// pairs of u8 x s8 products in saturating int16, which would break the error bound; null too
// for d > 1040, where an int32 product of two int8 vectors may no longer convert to float
// exactly.
std::unique_ptr<geometry::PairProducts> make_int8_pair_products(std::size_t dim);

// Null where oneDNN has no bf16 matmul on this CPU. The bound holds for any of its kernels
// (AMX, AVX512-BF16 or emulated): products of two bf16 are exact in fp32, sums round in fp32.
std::unique_ptr<geometry::PairProducts> make_bf16_pair_products(std::size_t dim);

// analyze's choice: bf16 on AMX, where its tiles need no rescaling pass and so load and
// multiply faster than int8's; int8 with VNNI alone, where bf16 runs at a fraction of int8's
// rate; null (the caller keeps the fp32 screen) with neither.
std::unique_ptr<geometry::PairProducts> make_screen_pair_products(std::size_t dim);

}  // namespace attngeom
