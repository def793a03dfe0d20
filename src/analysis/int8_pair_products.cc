#include "analysis/int8_pair_products.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "util/error.h"

namespace attngeom {
namespace {

using dnnl::memory;
constexpr std::size_t kTile = geometry::LoadedUnits::kTile;
constexpr std::int32_t kShift = 128;  // u8 = q + 128 holds q in [-127, 127]
constexpr float kLevels = 127.0f;
// Every |<q_i, q_l>| <= d 127^2 must convert to float exactly (< 2^24).
constexpr std::size_t kMaxDim = (std::size_t{1} << 24) / (127 * 127);

class Int8Units final : public geometry::LoadedUnits {
 public:
  Int8Units(const dnnl::engine& engine, const dnnl::matmul& matmul, const memory::desc& a, const memory::desc& b,
            const memory::desc& c, const memory::desc& scratchpad, std::span<const float> units, std::size_t count,
            std::size_t dim)
      : engine_(engine), stream_(engine), matmul_(matmul), a_(a), b_(b), c_(c), scratchpad_(scratchpad, engine),
        dim_(dim) {
    ATTNGEOM_CHECK(units.size() == count * dim);
    const std::size_t padded = (count + kTile - 1) / kTile * kTile;
    shifted_.assign(padded * dim, static_cast<std::uint8_t>(kShift));
    quantised_.assign(padded * dim, 0);
    scales_.assign(padded, 0.0f);
    shifts_.assign(padded, 0);
    dots_.resize(kTile * kTile);
    levels_.resize(dim);
    double max_error = 0.0;
    for (std::size_t k = 0; k < count; ++k) max_error = std::max(max_error, quantise(units.subspan(k * dim, dim), k));
    // With p_k = s_k q_k and e_k = u_k - p_k (u_k the float units, |u_k| <= n = 1 + 2^-22):
    //   |<u_i, u_l> - <p_i, p_l>| = |<e_i, u_l> + <p_i, e_l>| <= |e_i| n + (n + |e_i|) |e_l|;
    // rounding the inputs to float moved <u_i, u_l> by 2u + u^2 at most (as in the fp32 screen),
    // and float(<q_i, q_l>) * (s_i * s_l) is two float roundings of <p_i, p_l>, at most
    // (n + max |e|)^2 in size. |e_k| is a double sum, good to far better than the 2^-30 margin.
    constexpr double u = 0x1p-24, n = 1.0 + 0x1p-22;
    const double rounding = 2.0 * u + u * u;
    const double bound =
        rounding * (1.0 + (n + max_error) * (n + max_error)) + max_error * (2.0 * n + max_error);
    error_bound_ = bound * (1.0 + 0x1p-30);
  }

  void tile(std::size_t i0, std::size_t j0, float* out) override {
    memory a(a_, engine_, shifted_.data() + i0 * dim_);
    memory b(b_, engine_, quantised_.data() + j0 * dim_);  // rows j0.. read as the [d, kTile] transpose
    memory c(c_, engine_, dots_.data());
    matmul_.execute(stream_, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c},
                              {DNNL_ARG_SCRATCHPAD, scratchpad_}});
    stream_.wait();
    // [kTile, kTile] <q_i + 128, q_l> - 128 sum_t q_lt = <q_i, q_l>, exact in int32 and in float.
    const float* column_scales = scales_.data() + j0;
    const std::int32_t* column_shifts = shifts_.data() + j0;
    for (std::size_t r = 0; r < kTile; ++r) {
      const float row_scale = scales_[i0 + r];
      const std::int32_t* dots = dots_.data() + r * kTile;
      float* row = out + r * kTile;
      for (std::size_t b = 0; b < kTile; ++b) {
        row[b] = static_cast<float>(dots[b] - column_shifts[b]) * (row_scale * column_scales[b]);
      }
    }
  }

  double error_bound() const override { return error_bound_; }

 private:
  // q_k = round(u_k / s_k) with s_k = max_t |u_kt| / 127 (through its float reciprocal: the
  // bound reads the q_k made); a zero vector stays zero (s_k = 0). Returns |u_k - s_k q_k|.
  // Float, int and double work in separate loops, each of which vectorises.
  double quantise(std::span<const float> unit, std::size_t k) {
    const float* x = unit.data();
    float largest = 0.0f;
#pragma omp simd reduction(max : largest)
    for (std::size_t t = 0; t < dim_; ++t) largest = std::max(largest, std::abs(x[t]));
    if (largest == 0.0f) return 0.0;
    const float scale = largest / kLevels;
    const float inverse = kLevels / largest;
    scales_[k] = scale;
    float* levels = levels_.data();
    std::int8_t* quantised = quantised_.data() + k * dim_;
    std::uint8_t* shifted = shifted_.data() + k * dim_;
    std::int32_t sum = 0;
#pragma omp simd reduction(+ : sum)
    for (std::size_t t = 0; t < dim_; ++t) {
      levels[t] = std::clamp(std::nearbyint(x[t] * inverse), -kLevels, kLevels);
      const auto level = static_cast<std::int32_t>(levels[t]);
      quantised[t] = static_cast<std::int8_t>(level);
      shifted[t] = static_cast<std::uint8_t>(level + kShift);
      sum += level;
    }
    shifts_[k] = kShift * sum;
    double error2 = 0.0;
#pragma omp simd reduction(+ : error2)
    for (std::size_t t = 0; t < dim_; ++t) {
      const double error = x[t] - static_cast<double>(scale) * levels[t];  // the product is exact: 24 x 8 bits
      error2 += error * error;
    }
    return std::sqrt(error2);
  }

  const dnnl::engine& engine_;
  dnnl::stream stream_;  // one per loaded row: streams are not shared across threads
  const dnnl::matmul& matmul_;
  const memory::desc &a_, &b_, &c_;
  // Rows are analysed on many threads at once and one matmul serves them all, so each
  // loaded row brings its own scratchpad (oneDNN's shared one is not safe concurrently).
  memory scratchpad_;
  std::size_t dim_;
  std::vector<std::uint8_t> shifted_;   // [M rounded up to kTile, d] q + 128, padding q = 0
  std::vector<std::int8_t> quantised_;  // [M rounded up to kTile, d] q
  std::vector<float> scales_;           // [M rounded up to kTile] s_k
  std::vector<std::int32_t> shifts_;    // [M rounded up to kTile] 128 sum_t q_kt
  std::vector<std::int32_t> dots_;      // [kTile, kTile] the last tile's <q_i + 128, q_l>
  std::vector<float> levels_;           // [d] the key being quantised
  double error_bound_ = 0.0;
};

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

class Int8PairProducts final : public geometry::PairProducts {
 public:
  explicit Int8PairProducts(std::size_t dim)
      : dim_(dim),
        engine_(dnnl::engine::kind::cpu, 0),
        a_({kTile, static_cast<memory::dim>(dim)}, memory::data_type::u8, memory::format_tag::ab),
        b_({static_cast<memory::dim>(dim), kTile}, memory::data_type::s8, memory::format_tag::ba),
        c_({kTile, kTile}, memory::data_type::s32, memory::format_tag::ab),
        pd_(dnnl::matmul::desc(a_, b_, c_), user_scratchpad(), engine_),
        matmul_(pd_) {}

  std::unique_ptr<geometry::LoadedUnits> load(std::span<const float> units, std::size_t count,
                                              std::size_t dim) const override {
    if (dim != dim_) throw InputError("int8 pair products: built for d = " + std::to_string(dim_) + ", got " + std::to_string(dim));
    return std::make_unique<Int8Units>(engine_, matmul_, a_, b_, c_, pd_.scratchpad_desc(), units, count, dim);
  }

 private:
  std::size_t dim_;
  dnnl::engine engine_;
  memory::desc a_, b_, c_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul matmul_;
};

bool cpu_has_int8_dot() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto has = [isa](dnnl::cpu_isa feature) { return (isa & static_cast<unsigned>(feature)) == static_cast<unsigned>(feature); };
  return has(dnnl::cpu_isa::avx512_core_vnni) || has(dnnl::cpu_isa::avx2_vnni);
}

}  // namespace

std::unique_ptr<geometry::PairProducts> make_int8_pair_products(std::size_t dim) {
  if (!cpu_has_int8_dot() || dim > kMaxDim) return nullptr;
  return std::make_unique<Int8PairProducts>(dim);
}

}  // namespace attngeom
