#include "util/half.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace attngeom {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kI32:
      return "I32";
    case DType::kF64:
      return "F64";
  }
  return "?";
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kF64:
      return 8;
  }
  return 0;
}

float f16_to_f32(std::uint16_t bits) {
  const std::uint32_t sign = (bits >> 15) & 1u;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = bits & 0x3ffu;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

namespace {

// Every exponent bit set: Inf or NaN.
template <typename Bits, Bits kExponent>
NonFiniteCount scan_exponents(const void* data, std::size_t count) {
  constexpr std::size_t kChunk = std::size_t{1} << 16;
  const std::size_t chunks = (count + kChunk - 1) / kChunk;
  std::size_t total = 0;
  std::size_t first = count;
#pragma omp parallel for schedule(static) reduction(+ : total) reduction(min : first) if (chunks > 1)
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t begin = c * kChunk;
    const std::size_t end = std::min(count, begin + kChunk);
    std::size_t bad = 0;
    for (std::size_t i = begin; i < end; ++i) {
      Bits bits;
      std::memcpy(&bits, static_cast<const char*>(data) + i * sizeof(Bits), sizeof bits);
      bad += (bits & kExponent) == kExponent ? 1 : 0;
    }
    if (bad == 0) continue;
    total += bad;
    for (std::size_t i = begin; i < end; ++i) {
      Bits bits;
      std::memcpy(&bits, static_cast<const char*>(data) + i * sizeof(Bits), sizeof bits);
      if ((bits & kExponent) == kExponent) {
        first = std::min(first, i);
        break;
      }
    }
  }
  return {total, first};
}

}  // namespace

NonFiniteCount count_nonfinite(DType dtype, const void* data, std::size_t count) {
  switch (dtype) {
    case DType::kF32:
      return scan_exponents<std::uint32_t, 0x7f800000u>(data, count);
    case DType::kF16:
      return scan_exponents<std::uint16_t, 0x7c00u>(data, count);
    case DType::kBF16:
      return scan_exponents<std::uint16_t, 0x7f80u>(data, count);
    case DType::kI32:
    case DType::kF64:
      break;
  }
  ATTNGEOM_CHECK(false && "count_nonfinite: not a float dtype");
  return {};
}

void widen_to_f32(DType dtype, const void* src, float* dst, std::size_t count) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, count * sizeof(float));
      return;
    case DType::kBF16: {
      const auto* in = static_cast<const std::uint16_t*>(src);
#pragma omp parallel for schedule(static) if (count > (1u << 16))
      for (std::size_t i = 0; i < count; ++i) dst[i] = bf16_to_f32(in[i]);
      return;
    }
    case DType::kF16: {
      const auto* in = static_cast<const std::uint16_t*>(src);
#pragma omp parallel for schedule(static) if (count > (1u << 16))
      for (std::size_t i = 0; i < count; ++i) dst[i] = f16_to_f32(in[i]);
      return;
    }
    case DType::kI32:
    case DType::kF64:
      break;
  }
  ATTNGEOM_CHECK(false && "widen_to_f32: not a float dtype");
}

}  // namespace attngeom
