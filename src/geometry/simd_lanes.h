#pragma once
// The vectors the hand-vectorised geometry kernels (lag band, cosine screen, profile-fit
// screen) work in: GCC vector extensions, one AVX-512 register on the native build, lowered
// to narrower registers elsewhere.
#include <cstddef>

namespace attngeom::geometry {

inline constexpr std::size_t kLanes = 16;
using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));
// The same register as doubles.
inline constexpr std::size_t kDoubleLanes = kLanes / 2;
using DoubleLanes = double __attribute__((vector_size(kDoubleLanes * sizeof(double))));

}  // namespace attngeom::geometry
