#include "analysis/bf16_pair_products.h"

#include <cstdint>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "util/error.h"
#include "util/half.h"

namespace attngeom {
namespace {

using dnnl::memory;
constexpr auto kTile = static_cast<memory::dim>(geometry::LoadedUnits::kTile);

class Bf16Units final : public geometry::LoadedUnits {
 public:
  Bf16Units(const dnnl::engine& engine, const dnnl::matmul& matmul, const memory::desc& a, const memory::desc& b,
            const memory::desc& c, const memory::desc& scratchpad, std::span<const float> units, std::size_t count,
            std::size_t dim)
      : engine_(engine), stream_(engine), matmul_(matmul), a_(a), b_(b), c_(c), scratchpad_(scratchpad, engine),
        dim_(dim), rows_((count + kTile - 1) / kTile * kTile * dim, 0) {
    ATTNGEOM_CHECK(units.size() == count * dim);
    // Through float, as error_bound() assumes.
    for (std::size_t i = 0; i < units.size(); ++i) rows_[i] = f32_to_bf16(units[i]);
  }

  void tile(std::size_t i0, std::size_t j0, float* out) override {
    memory a(a_, engine_, rows_.data() + i0 * dim_);
    memory b(b_, engine_, rows_.data() + j0 * dim_);  // rows j0.. read as the [d, kTile] transpose
    memory c(c_, engine_, out);
    matmul_.execute(stream_, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c},
                              {DNNL_ARG_SCRATCHPAD, scratchpad_}});
    stream_.wait();
  }

 private:
  const dnnl::engine& engine_;
  dnnl::stream stream_;  // one per loaded row: streams are not shared across threads
  const dnnl::matmul& matmul_;
  const memory::desc &a_, &b_, &c_;
  // Rows are analysed on many threads at once and one matmul serves them all, so each
  // loaded row brings its own scratchpad (oneDNN's shared one is not safe concurrently).
  memory scratchpad_;
  std::size_t dim_;
  std::vector<std::uint16_t> rows_;  // [M rounded up to kTile, d] bf16, zero padded
};

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

class Bf16PairProducts final : public geometry::PairProducts {
 public:
  explicit Bf16PairProducts(std::size_t dim)
      : dim_(dim),
        engine_(dnnl::engine::kind::cpu, 0),
        a_({kTile, static_cast<memory::dim>(dim)}, memory::data_type::bf16, memory::format_tag::ab),
        b_({static_cast<memory::dim>(dim), kTile}, memory::data_type::bf16, memory::format_tag::ba),
        c_({kTile, kTile}, memory::data_type::f32, memory::format_tag::ab),
        pd_(dnnl::matmul::desc(a_, b_, c_), user_scratchpad(), engine_),
        matmul_(pd_) {}

  std::string_view name() const override { return "bf16"; }

  std::unique_ptr<geometry::LoadedUnits> load(std::span<const float> units, std::size_t count,
                                              std::size_t dim) const override {
    if (dim != dim_) throw InputError("bf16 pair products: built for d = " + std::to_string(dim_) + ", got " + std::to_string(dim));
    return std::make_unique<Bf16Units>(engine_, matmul_, a_, b_, c_, pd_.scratchpad_desc(), units, count, dim);
  }

  // Rounding to float then bf16 moves each element by a relative e = (1 + 2^-24)(1 + 2^-8) - 1,
  // each product by 2e + e^2; the fp32 sum adds gamma_d; AMX flushes bf16 subnormals (below
  // 2^-126, at most d * 2^-126 in all). All scale sum_t |u_it u_lt| <= 1; doubled for margin.
  double error_bound(std::size_t dim) const override {
    const double e = (1.0 + 0x1p-24) * (1.0 + 0x1p-8) - 1.0;
    const double bound = 2.0 * e + e * e + geometry::summation_error_factor(dim, 0x1p-24) * (1.0 + e) * (1.0 + e) +
                         static_cast<double>(dim) * 0x1p-126;
    return 2.0 * bound;
  }

 private:
  std::size_t dim_;
  dnnl::engine engine_;
  memory::desc a_, b_, c_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul matmul_;
};

}  // namespace

std::unique_ptr<geometry::PairProducts> make_bf16_pair_products(std::size_t dim) {
  return std::make_unique<Bf16PairProducts>(dim);
}

}  // namespace attngeom
