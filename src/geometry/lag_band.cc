#include "geometry/lag_band.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

namespace attngeom::geometry {
namespace {

// The band is cut into blocks of kLanes consecutive keys i against kLags consecutive lags:
// lane w of vector j holds <u_{i0 + w}, u_{i0 + w + tau0 + j}>, so every lane is a pair of the
// band (key-by-partner blocks waste its corners: a third of their lanes at tau_max = 64). Each
// step over t loads two aligned vectors of partners and shifts them across lanes, where
// unaligned loads would split a cache line almost every time. The 16 x 16 float products fill
// 16 AVX-512 registers. Floats run twice the lanes of doubles; a mean cosine needs no more
// than their ~d 2^-24 accuracy.
constexpr std::size_t kLanes = 16;
constexpr std::size_t kLags = 16;
using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));  // one AVX-512 register
using Block = std::array<Lanes, kLags>;
constexpr std::size_t kAlignment = sizeof(Lanes);

// The unit vectors rounded to float and transposed, so that consecutive keys run across a
// vector's lanes; rows start on a vector boundary.
class TransposedUnits {
 public:
  // Key 0 (the sink) reads as zero, as do keys past M: a block may read past the last key.
  TransposedUnits(const UnitRows& u, std::size_t stride)
      : stride_(stride), storage_(u.dim * stride + kLanes, 0.0f) {
    const auto address = reinterpret_cast<std::uintptr_t>(storage_.data());
    rows_ = storage_.data() + (kAlignment - address % kAlignment) % kAlignment / sizeof(float);
    // kLanes keys at a time: each write then fills a whole cache line of a row of the result.
    for (std::size_t k0 = 1; k0 < u.keys(); k0 += kLanes) {
      const std::size_t end = std::min(k0 + kLanes, u.keys());
      for (std::size_t t = 0; t < u.dim; ++t) {
        float* row = rows_ + t * stride;
        for (std::size_t k = k0; k < end; ++k) row[k] = static_cast<float>(u.unit(k)[t]);
      }
    }
  }
  // Vectors pass by reference throughout: by value they would change the ABI on CPUs
  // without AVX-512 (-Wpsabi).
  void load(std::size_t t, std::size_t key, Lanes& out) const { std::memcpy(&out, rows_ + t * stride_ + key, sizeof out); }

 private:
  std::size_t stride_;          // a multiple of kLanes
  std::vector<float> storage_;  // [d, stride] from rows_, plus room to align
  float* rows_ = nullptr;
};

// acc = fma(keys, partners, acc) lane by lane, partners being lanes S.. of the concatenation
// lo:hi: one rounding per term (-ffp-contract=off guards exact zeros elsewhere; a cosine has
// none to keep).
template <std::size_t S, std::size_t... W>
void add_shifted(Lanes& acc, const Lanes& keys, const Lanes& lo, const Lanes& hi, std::index_sequence<W...>) {
  const Lanes partners = __builtin_shufflevector(lo, hi, (W + S)...);
#pragma omp simd
  for (std::size_t w = 0; w < kLanes; ++w) acc[w] = std::fma(keys[w], partners[w], acc[w]);
}

// One step over t: lag tau0 + j pairs the keys with lanes j + 1.. of partners lo:hi.
template <std::size_t... J>
void add_step(Block& block, const Lanes& keys, const Lanes& lo, const Lanes& hi, std::index_sequence<J...>) {
  (add_shifted<J + 1>(block[J], keys, lo, hi, std::make_index_sequence<kLanes>{}), ...);
}

// block[j][w] = <u_{i0 + w}, u_{i0 + w + tau0 + j}>, tau0 = first_lag + 1, each summed over t in
// order; i0 and first_lag are multiples of kLanes. The block is a local returned by value, so
// that it lives in registers.
Block block_products(const TransposedUnits& u, std::size_t dim, std::size_t i0, std::size_t first_lag) {
  Block block{};
  Lanes keys, lo, hi;
  for (std::size_t t = 0; t < dim; ++t) {
    u.load(t, i0, keys);
    u.load(t, i0 + first_lag, lo);
    u.load(t, i0 + first_lag + kLanes, hi);
    add_step(block, keys, lo, hi, std::make_index_sequence<kLags>{});
  }
  return block;
}

}  // namespace

LagBandSums lag_band_sums(const UnitRows& u, std::size_t max_lag) {
  const std::size_t length = u.keys() - 1;  // L: content keys are 1..L
  LagBandSums out{std::vector<double>(max_lag + 1, 0.0), std::vector<std::size_t>(max_lag + 1, 0), 0};
  const std::size_t lag_blocks = (max_lag + kLags - 1) / kLags;
  // Zero vectors (the sink's lane, keys past L, and vectors of norm 0, whose units are exactly
  // 0) give products of exactly +0: they add nothing and are never negative.
  const std::size_t stride = (u.keys() + (lag_blocks + 1) * kLanes + kLanes - 1) / kLanes * kLanes;
  const TransposedUnits transposed(u, stride);
  std::vector<double> lane_sums((max_lag + 1) * kLanes, 0.0);  // [tau_max + 1, kLanes] by lag, then lane
  for (std::size_t i0 = 0; i0 < length; i0 += kLanes) {
    for (std::size_t first_lag = 0; first_lag < max_lag; first_lag += kLags) {
      const Block block = block_products(transposed, u.dim, i0, first_lag);
      for (std::size_t j = 0; j < kLags && first_lag + j < max_lag; ++j) {
        double* sum = lane_sums.data() + (first_lag + j + 1) * kLanes;
        std::size_t negative = 0;
#pragma omp simd reduction(+ : negative)
        for (std::size_t w = 0; w < kLanes; ++w) {
          sum[w] += block[j][w];
          negative += block[j][w] < 0.0f;
        }
        out.negative_pairs += negative;
      }
    }
  }
  for (std::size_t tau = 1; tau <= max_lag; ++tau) {
    for (std::size_t w = 0; w < kLanes; ++w) out.sums[tau] += lane_sums[tau * kLanes + w];
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
