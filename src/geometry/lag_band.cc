#include "geometry/lag_band.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace attngeom::geometry {
namespace {

// The band is cut into blocks of kBlockKeys keys against kBlockLanes consecutive partner keys:
// their 8 x 48 float products fill 24 AVX-512 registers, and each step over t loads three
// vectors of partners for 24 fused multiply-adds. Per-pair dot products would each end in a
// horizontal sum, and a whole key's band (64 partners x d) does not stay in L1. Floats run
// twice the lanes of doubles; a mean cosine needs no more than their ~d 2^-24 accuracy.
constexpr std::size_t kBlockKeys = 8;
constexpr std::size_t kBlockLanes = 48;
using Block = std::array<std::array<float, kBlockLanes>, kBlockKeys>;

// The unit vectors rounded to float and transposed, so that consecutive keys run across a
// vector's lanes.
struct TransposedUnits {
  std::size_t stride = 0;     // >= M, zeros past M: a block may read past the last key
  std::vector<float> values;  // [d, stride]
};

TransposedUnits transpose(const UnitRows& u, std::size_t stride) {
  TransposedUnits out{stride, std::vector<float>(u.dim * stride, 0.0f)};
  // kBlockKeys keys at a time: each write then fills a whole cache line of a row of the result.
  for (std::size_t k0 = 0; k0 < u.keys(); k0 += kBlockKeys) {
    const std::size_t end = std::min(k0 + kBlockKeys, u.keys());
    for (std::size_t t = 0; t < u.dim; ++t) {
      float* row = out.values.data() + t * stride;
      for (std::size_t k = k0; k < end; ++k) row[k] = static_cast<float>(u.unit(k)[t]);
    }
  }
  return out;
}

// block[a][w] = <u_{i0 + a}, u_{j0 + w}>, each summed over t in order. The block is a local
// returned by value, so that it lives in registers. std::fma: one rounding per term
// (-ffp-contract=off guards exact zeros elsewhere; a cosine has none to keep).
Block block_products(const TransposedUnits& u, std::size_t dim, std::size_t i0, std::size_t j0) {
  Block block{};
  for (std::size_t t = 0; t < dim; ++t) {
    const float* row = u.values.data() + t * u.stride;  // [stride] coordinate t of every key
    for (std::size_t a = 0; a < kBlockKeys; ++a) {
      const float x = row[i0 + a];
#pragma omp simd
      for (std::size_t w = 0; w < kBlockLanes; ++w) block[a][w] = std::fma(x, row[j0 + w], block[a][w]);
    }
  }
  return block;
}

}  // namespace

LagBandSums lag_band_sums(const UnitRows& u, std::size_t max_lag) {
  const std::size_t length = u.keys() - 1;  // L: content keys are 1..L
  LagBandSums out{std::vector<double>(max_lag + 1, 0.0), std::vector<std::size_t>(max_lag + 1, 0), 0};
  // Keys i0..i0+7 pair with keys up to i0 + 7 + tau_max: the lanes from i0 on, in passes.
  const std::size_t passes = (kBlockKeys + max_lag + kBlockLanes - 1) / kBlockLanes;
  const TransposedUnits transposed = transpose(u, u.keys() + passes * kBlockLanes);  // [d, stride]
  for (std::size_t i0 = 0; i0 + 1 < length; i0 += kBlockKeys) {
    for (std::size_t pass = 0; pass < passes; ++pass) {
      const std::size_t j0 = i0 + pass * kBlockLanes;
      const Block block = block_products(transposed, u.dim, i0, j0);
      // Within a block, a lag's pairs come in ascending i (a larger a meets it in the same or a
      // later pass), so each lag's sum still runs over i in order.
      for (std::size_t a = 0; a < kBlockKeys; ++a) {
        const std::size_t i = i0 + a;
        if (i < 1 || i >= length || !u.defined[i]) continue;
        const std::size_t lags = std::min(max_lag, length - i);  // tau with i + tau <= L
        // Lane w holds tau = j0 + w - i; keep 1 <= tau <= lags, partners i + 1 .. end - 1.
        const std::size_t end = i + lags + 1;
        const std::size_t first = i + 1 > j0 ? i + 1 - j0 : 0;
        const std::size_t last = end > j0 ? std::min(kBlockLanes, end - j0) : 0;
        if (first >= last) continue;
        // A zero vector's unit is exactly 0, so its pairs add 0 and are never negative.
        const float* cosines = block[a].data() + first;
        double* sum = out.sums.data() + (j0 + first - i);
        std::size_t negative = 0;
#pragma omp simd reduction(+ : negative)
        for (std::size_t w = 0; w < last - first; ++w) {
          sum[w] += cosines[w];
          negative += cosines[w] < 0.0f;
        }
        out.negative_pairs += negative;
      }
    }
  }
  // The pairs behind each lag do not depend on the cosines.
  const unsigned char* defined = u.defined.data();
  for (std::size_t tau = 1; tau <= max_lag; ++tau) {
    const std::size_t end = length - tau + 1;  // i + tau <= L
    std::size_t pairs = 0;
#pragma omp simd reduction(+ : pairs)
    for (std::size_t i = 1; i < end; ++i) pairs += defined[i] & defined[i + tau];
    out.pairs[tau] = pairs;
  }
  return out;
}

}  // namespace attngeom::geometry
