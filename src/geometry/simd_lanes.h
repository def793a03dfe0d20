#pragma once
// The float vector the hand-vectorised geometry kernels (lag band, screen) work in: GCC
// vector extensions, one AVX-512 register on the native build, lowered to narrower
// registers elsewhere.
#include <cstddef>

namespace attngeom::geometry {

inline constexpr std::size_t kLanes = 16;
using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));

}  // namespace attngeom::geometry
