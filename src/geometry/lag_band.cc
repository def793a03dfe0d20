#include "geometry/lag_band.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "geometry/simd_lanes.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

// The band is cut into blocks of kLanes consecutive keys i against kLanes consecutive lags:
// lane w of a vector holds <u_{i0 + w}, u_{i0 + w + tau}>, so every lane is a pair of the
// band (key-by-partner blocks waste its corners: a third of their lanes at tau_max = 64).
// Partners come from two aligned vectors shifted across lanes, where unaligned loads would
// split a cache line almost every time. Each shifted vector serves kKeyBlocks key blocks at
// once (key blocks kLanes apart meet the same partners kLanes lags apart): one shift per
// kKeyBlocks FMAs. Floats run twice the lanes of doubles; a mean cosine needs no more than
// their ~d 2^-24 accuracy.
constexpr std::size_t kKeyBlocks = 4;  // key blocks sharing each shifted partner vector
constexpr std::size_t kShifts = 4;     // lags per key block in one pass over t
// [kKeyBlocks * kShifts] accumulators, key block by key block: 16 registers, with 7 more for
// keys and partners. Flat and indexed by constants only, so that GCC keeps it in registers.
using Tile = std::array<Lanes, kKeyBlocks * kShifts>;
constexpr std::size_t kAlignment = sizeof(Lanes);
constexpr std::size_t kFront = (kKeyBlocks - 1) * kLanes;  // keys before 0, read as zeros

using Square = std::array<Lanes, kLanes>;  // kLanes x kLanes floats

// One stage of a square's transposition: rows w and w + H (w without bit H) swap their
// off-diagonal H-wide blocks.
template <std::size_t H, std::size_t... J>
void swap_blocks(Lanes& a, Lanes& b, std::index_sequence<J...>) {
  const Lanes upper = __builtin_shufflevector(a, b, ((J & H) == 0 ? J : kLanes + J - H)...);
  const Lanes lower = __builtin_shufflevector(a, b, ((J & H) == 0 ? J + H : kLanes + J)...);
  a = upper;
  b = lower;
}

template <std::size_t H>
void transpose_stage(Square& square) {
  for (std::size_t w = 0; w < kLanes; ++w) {
    if ((w & H) == 0) swap_blocks<H>(square[w], square[w + H], std::make_index_sequence<kLanes>{});
  }
}

// In registers, in log2(kLanes) stages of kLanes shuffles.
void transpose(Square& square) {
  transpose_stage<8>(square);
  transpose_stage<4>(square);
  transpose_stage<2>(square);
  transpose_stage<1>(square);
}

}  // namespace

// The units rounded to float (UnitRows::rounded), transposed in blocks of kLanes keys: block b holds
// keys kLanes b - kFront.., [d, kLanes], so consecutive keys run across a vector's lanes and
// a pass over t reads each block's vectors one after another (with rows of all M keys, each
// step over t would land in another page).
class TransposedUnits {
 public:
  // Key 0 (the sink) reads as zero, as do keys past M and the kFront keys before 0: a pass
  // may read past either end.
  TransposedUnits(const UnitRows& u, std::size_t blocks)
      : dim_(u.dim), storage_(blocks * u.dim * kLanes + kLanes, 0.0f) {
    const auto address = reinterpret_cast<std::uintptr_t>(storage_.data());
    blocks_ = storage_.data() + (kAlignment - address % kAlignment) % kAlignment / sizeof(float);
    for (std::size_t b = 0; b * kLanes < u.keys() + kFront; ++b) fill_block(u, b);
  }
  // Keys key.. from step t; key is a multiple of kLanes. Vectors pass by reference
  // throughout: by value they would change the ABI on CPUs without AVX-512 (-Wpsabi).
  void load(std::size_t t, std::ptrdiff_t key, Lanes& out) const {
    const auto block = static_cast<std::size_t>(key + static_cast<std::ptrdiff_t>(kFront)) / kLanes;
    std::memcpy(&out, blocks_ + (block * dim_ + t) * kLanes, sizeof out);
  }

 private:
  // Block b: whole kLanes x kLanes squares of (key, t) transposed in registers, the rest
  // of t element by element.
  void fill_block(const UnitRows& u, std::size_t b) {
    const std::ptrdiff_t first = static_cast<std::ptrdiff_t>(b * kLanes) - static_cast<std::ptrdiff_t>(kFront);
    const auto keys = static_cast<std::ptrdiff_t>(u.keys());
    const auto key_of = [&](std::size_t w) { return first + static_cast<std::ptrdiff_t>(w); };
    const auto defined = [&](std::size_t w) { return key_of(w) >= 1 && key_of(w) < keys; };
    float* block = blocks_ + b * dim_ * kLanes;
    std::size_t t = 0;
    for (; t + kLanes <= dim_; t += kLanes) {
      Square square{};  // square[w] = keys' units at t..t + kLanes - 1
      for (std::size_t w = 0; w < kLanes; ++w) {
        if (defined(w))
          std::memcpy(&square[w], u.rounded_unit(static_cast<std::size_t>(key_of(w))) + t, sizeof square[w]);
      }
      transpose(square);
      std::memcpy(block + t * kLanes, square.data(), sizeof square);
    }
    for (; t < dim_; ++t) {
      for (std::size_t w = 0; w < kLanes; ++w) {
        if (defined(w)) block[t * kLanes + w] = u.rounded_unit(static_cast<std::size_t>(key_of(w)))[t];
      }
    }
  }

  std::size_t dim_;
  std::vector<float> storage_;  // [blocks, d, kLanes] from blocks_, plus room to align
  float* blocks_ = nullptr;
};

namespace {

// acc = fma(keys, partners, acc) lane by lane: one rounding per term (-ffp-contract=off
// guards exact zeros elsewhere; a cosine has none to keep).
void add_product(Lanes& acc, const Lanes& keys, const Lanes& partners) {
#pragma omp simd
  for (std::size_t w = 0; w < kLanes; ++w) acc[w] = std::fma(keys[w], partners[w], acc[w]);
}

// Partners lanes S.. of the concatenation lo:hi, against every key block.
template <std::size_t S, std::size_t J, std::size_t... W, std::size_t... K>
void add_shifted(Tile& tile, const std::array<Lanes, kKeyBlocks>& keys, const Lanes& lo, const Lanes& hi,
                 std::index_sequence<W...>, std::index_sequence<K...>) {
  const Lanes partners = __builtin_shufflevector(lo, hi, (W + S)...);
  (add_product(tile[K * kShifts + J], keys[K], partners), ...);
}

template <std::size_t S0, std::size_t... J>
void add_step(Tile& tile, const std::array<Lanes, kKeyBlocks>& keys, const Lanes& lo, const Lanes& hi,
              std::index_sequence<J...>) {
  (add_shifted<S0 + J + 1, J>(tile, keys, lo, hi, std::make_index_sequence<kLanes>{},
                              std::make_index_sequence<kKeyBlocks>{}),
   ...);
}

// tile[k kShifts + j][w] = <u_{i + w}, u_{i + w + tau}> with i = p0 - kLanes (g0 + k) and
// tau = kLanes (g0 + k) + S0 + j + 1, each summed over t in order: key block k meets the
// partners from p0 on at lag group g0 + k. p0 is a multiple of kLanes. The tile is a local
// returned by value, so that it lives in registers.
template <std::size_t S0, std::size_t... K>
Tile tile_products(const TransposedUnits& u, std::size_t dim, std::ptrdiff_t p0, std::size_t g0,
                   std::index_sequence<K...>) {
  Tile tile{};
  std::array<Lanes, kKeyBlocks> keys;
  Lanes lo, hi;
  for (std::size_t t = 0; t < dim; ++t) {
    (u.load(t, p0 - static_cast<std::ptrdiff_t>(kLanes * (g0 + K)), keys[K]), ...);
    u.load(t, p0, lo);
    u.load(t, p0 + static_cast<std::ptrdiff_t>(kLanes), hi);
    add_step<S0>(tile, keys, lo, hi, std::make_index_sequence<kShifts>{});
  }
  return tile;
}

// Hands each tile's products to `take(lanes, i0, tau)` for its key blocks i0 in [key_begin,
// key_end) and its lags up to tau_max: lane w holds <u_{i0 + w}, u_{i0 + w + tau}>.
template <class Take>
void hand_over_tile(const Tile& tile, std::ptrdiff_t p0, std::size_t g0, std::size_t s0, std::ptrdiff_t key_begin,
                    std::ptrdiff_t key_end, std::size_t max_lag, Take& take) {
  for (std::size_t k = 0; k < kKeyBlocks; ++k) {
    const std::ptrdiff_t i0 = p0 - static_cast<std::ptrdiff_t>(kLanes * (g0 + k));
    if (i0 < key_begin || i0 >= key_end) continue;
    for (std::size_t j = 0; j < kShifts; ++j) {
      const std::size_t tau = kLanes * (g0 + k) + s0 + j + 1;
      if (tau <= max_lag) take(tile[k * kShifts + j], static_cast<std::size_t>(i0), tau);
    }
  }
}

// Every lag of lag groups g0..g0 + kKeyBlocks - 1 against the partners from p0 on: one
// pass over t per kShifts lags.
template <class Take, std::size_t... P>
void add_passes(const TransposedUnits& u, std::size_t dim, std::ptrdiff_t p0, std::size_t g0, std::ptrdiff_t key_begin,
                std::ptrdiff_t key_end, std::size_t max_lag, Take& take, std::index_sequence<P...>) {
  constexpr auto key_blocks = std::make_index_sequence<kKeyBlocks>{};
  (hand_over_tile(tile_products<P * kShifts>(u, dim, p0, g0, key_blocks), p0, g0, P * kShifts, key_begin, key_end,
                  max_lag, take),
   ...);
}

// Content keys 1..L in blocks of kLanes from key 0 (the sink's lane gives +0).
std::size_t key_blocks_of(std::size_t length) { return (length + kLanes - 1) / kLanes; }

// Lags kLanes g + 1 .. kLanes (g + 1) form lag group g.
std::size_t lag_groups_of(std::size_t max_lag) { return (max_lag + kLanes - 1) / kLanes; }

// Zero vectors (the sink's lane, keys past L or before 0, and vectors of norm 0, whose units
// are exactly 0) give products of exactly +0: they add nothing and are never negative.
// Partners reach less than kLanes (key_blocks + lag_groups) keys past key 0.
TransposedUnits transposed_band(const UnitRows& u, std::size_t max_lag) {
  return TransposedUnits(u, kFront / kLanes + key_blocks_of(u.keys() - 1) + lag_groups_of(max_lag) + 1);
}

// The products of key blocks [first, end) (of key_blocks_of(L)) with their partners, handed to
// `take`; each lag's key blocks come in ascending order.
template <class Take>
void band_products(const TransposedUnits& transposed, std::size_t dim, std::size_t length, std::size_t max_lag,
                   std::size_t first, std::size_t end, Take& take) {
  const std::size_t lag_groups = lag_groups_of(max_lag);
  const auto key_begin = static_cast<std::ptrdiff_t>(first * kLanes);
  const auto key_end = static_cast<std::ptrdiff_t>(std::min(length, end * kLanes));
  for (std::size_t g0 = 0; g0 < lag_groups; g0 += kKeyBlocks) {
    const std::size_t last_group = std::min(g0 + kKeyBlocks, lag_groups) - 1;
    // Block b meets key block b - g0 - k at lag group g0 + k.
    for (std::size_t b = g0 + first; b < end + last_group; ++b) {
      add_passes(transposed, dim, static_cast<std::ptrdiff_t>(kLanes * b), g0, key_begin, key_end, max_lag, take,
                 std::make_index_sequence<kLanes / kShifts>{});
    }
  }
}

}  // namespace

LagBandSums lag_band_sums(const UnitRows& u, std::size_t max_lag) {
  const std::size_t length = u.keys() - 1;  // L: content keys are 1..L
  LagBandSums out{std::vector<double>(max_lag + 1, 0.0), std::vector<std::size_t>(max_lag + 1, 0), 0};
  std::vector<double> lane_sums((max_lag + 1) * kLanes, 0.0);  // [tau_max + 1, kLanes] by lag, then lane
  const auto add = [&](const Lanes& products, std::size_t, std::size_t tau) {
    double* sum = lane_sums.data() + tau * kLanes;
    std::size_t negative = 0;
#pragma omp simd reduction(+ : negative)
    for (std::size_t w = 0; w < kLanes; ++w) {
      sum[w] += products[w];
      negative += products[w] < 0.0f;
    }
    out.negative_pairs += negative;
  };
  band_products(transposed_band(u, max_lag), u.dim, length, max_lag, 0, key_blocks_of(length), add);
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

LagBandCosines::LagBandCosines(const UnitRows& units, std::size_t max_lag)
    : units_(units),
      length_(units.keys() - 1),
      max_lag_(max_lag),
      transposed_(std::make_unique<TransposedUnits>(transposed_band(units, max_lag))),
      cosines_((max_lag + 1) * (length_ + 1), 0.0f) {}

LagBandCosines::~LagBandCosines() = default;

std::size_t LagBandCosines::parts() const { return (key_blocks_of(length_) + kBlocksPerPart - 1) / kBlocksPerPart; }

void LagBandCosines::compute(std::size_t part) {
  const std::size_t first = part * kBlocksPerPart;
  const std::size_t end = std::min(first + kBlocksPerPart, key_blocks_of(length_));
  const std::size_t stride = length_ + 1;
  const auto store = [&](const Lanes& products, std::size_t i0, std::size_t tau) {
    float* row = cosines_.data() + tau * stride;
    for (std::size_t w = 0; w < kLanes && i0 + w <= length_; ++w) row[i0 + w] = products[w];
  };
  band_products(*transposed_, units_.dim, length_, max_lag_, first, end, store);
}

std::vector<LagBandSums> LagBandCosines::sums_of_rows(std::span<const std::size_t> keys,
                                                      std::span<const std::size_t> max_lags) const {
  ATTNGEOM_CHECK(keys.size() == max_lags.size() && std::is_sorted(keys.begin(), keys.end()) &&
                 (keys.empty() || (keys.front() >= 1 && keys.back() <= length_ + 1)));
  std::vector<LagBandSums> out(keys.size());
  for (std::size_t r = 0; r < keys.size(); ++r) {
    ATTNGEOM_CHECK(max_lags[r] <= max_lag_);
    out[r] = {std::vector<double>(max_lags[r] + 1, 0.0), std::vector<std::size_t>(max_lags[r] + 1, 0), 0};
  }
  const unsigned char* defined = units_.defined.data();
  for (std::size_t tau = 1; tau <= max_lag_; ++tau) {
    // Row r holds the pairs i <= L_r - tau; lane i mod kLanes sums them in ascending i.
    std::array<double, kLanes> lanes{};
    std::size_t negative = 0, pairs = 0;
    std::size_t r = 0;
    const auto take_rows_ending_before = [&](std::size_t i) {
      for (; r < keys.size() && keys[r] <= i + tau; ++r) {  // L_r - tau < i
        if (tau > max_lags[r]) continue;
        for (const double lane : lanes) out[r].sums[tau] += lane;
        out[r].pairs[tau] = pairs;
        out[r].negative_pairs += negative;
      }
    };
    const float* cosine = cosines_.data() + tau * (length_ + 1);
    for (std::size_t i = 1; i + tau <= length_ && r < keys.size(); ++i) {
      take_rows_ending_before(i);
      lanes[i % kLanes] += cosine[i];
      negative += cosine[i] < 0.0f;
      pairs += defined[i] & defined[i + tau];
    }
    take_rows_ending_before(length_ + 1);
  }
  return out;
}

}  // namespace attngeom::geometry
