#include "util/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace attngeom {
namespace {

TEST(Half, Bf16RoundTripIsExactForBf16Values) {
  for (std::uint32_t bits = 0; bits < 0x10000u; bits += 7) {
    const float value = bf16_to_f32(static_cast<std::uint16_t>(bits));
    if (std::isnan(value)) continue;
    EXPECT_EQ(f32_to_bf16(value), bits);
  }
}

TEST(Half, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 lies exactly between two bf16 values; ties go to the even mantissa (1.0).
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
}

TEST(Half, F16MatchesKnownEncodings) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
}

}  // namespace
}  // namespace attngeom
