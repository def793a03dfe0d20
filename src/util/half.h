#pragma once
// Storage dtypes of checkpoint tensors and their widening to fp32. The bf16 conversions run in
// CUDA kernels too: this header stays C++17.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "util/host_device.h"

namespace attngeom {

enum class DType { kF32, kF16, kBF16, kI32, kF64 };

std::string_view dtype_name(DType dtype);
std::size_t dtype_size(DType dtype);

ATTNGEOM_HD inline float bf16_to_f32(std::uint16_t bits) {
  const std::uint32_t widened = static_cast<std::uint32_t>(bits) << 16;
  float out;
  std::memcpy(&out, &widened, sizeof out);
  return out;
}

// Round-to-nearest-even, as torch does; NaN stays NaN.
ATTNGEOM_HD inline std::uint16_t f32_to_bf16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

float f16_to_f32(std::uint16_t bits);

// NaN and Inf among `count` elements of `dtype` (F32, F16 or BF16) at `data`: how many,
// and the index of the first (== count when there is none). Reads exponent bits only,
// in parallel, so a whole checkpoint scans at memory bandwidth.
struct NonFiniteCount {
  std::size_t count = 0;
  std::size_t first = 0;
};
NonFiniteCount count_nonfinite(DType dtype, const void* data, std::size_t count);

// Widens `count` elements of `dtype` (F32, F16 or BF16) stored at `src` into `dst`.
void widen_to_f32(DType dtype, const void* src, float* dst, std::size_t count);

}  // namespace attngeom
