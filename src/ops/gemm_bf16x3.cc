// fp32 products on AMX. An fp32 activation is the exact sum of three bf16 terms
// (8 + 8 + 8 significand bits), and a bf16 term times a bf16 weight is exact in fp32, so
// x w^T = hi w^T + mid w^T + lo w^T with every product exact and fp32 accumulation: the
// same maths as an fp32 GEMM against the bf16-stored weights, at three bf16 matmuls.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/bf16_matmul.h"
#include "ops/gemm.h"
#include "util/error.h"
#include "util/half.h"

namespace attngeom {
namespace {

std::uint16_t upper_half(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<std::uint16_t>(bits >> 16);
}

class Bf16x3Backend final : public LinearBackend {
 public:
  Precision precision() const override { return Precision::kFp32; }
  std::string_view kernel() const override { return "onednn-bf16x3"; }

  void linear_products(const LinearInput& x, std::span<const LinearOutput> outputs) override {
    const std::int64_t count = x.rows * x.cols;
    // The split is exact only against bf16 weights; others take the sgemm path, which needs
    // the whole of x in fp32: then it is split from there.
    const bool all_bf16 = std::all_of(outputs.begin(), outputs.end(),
                                      [](const LinearOutput& output) { return output.weight->dtype == DType::kBF16; });
    LinearInput source = x;
    if (!all_bf16) source.stored = fp32_rows(x);
    terms_.resize(static_cast<std::size_t>(3 * count));  // [3, rows, in]: lo, mid, hi
    std::uint16_t* lo = terms_.data();
    for_each_row_block(source, [&](std::int64_t begin, std::int64_t end, const float* rows) {
      const std::int64_t at = begin * x.cols;
      split_into_bf16_terms(rows, (end - begin) * x.cols, lo + at, lo + count + at, lo + 2 * count + at);
    });
    for (const LinearOutput& output : outputs) {
      const TensorView& w = *output.weight;
      ATTNGEOM_CHECK(w.cols == x.cols);
      if (w.dtype != DType::kBF16) {
        sgemm_->linear(source.stored, x.rows, w, output.y);
        continue;
      }
      // Smallest terms first, each product summed into y in fp32.
      for (int t = 0; t < 3; ++t) {
        matmul_.multiply(x.rows, w.cols, w.rows, lo + t * count, w.data, output.y, w.rows, t > 0);
      }
    }
  }

 private:
  std::unique_ptr<LinearBackend> sgemm_ = make_fp32_backend();
  Bf16Matmul matmul_;
  std::vector<std::uint16_t> terms_;
};

}  // namespace

void split_into_bf16_terms(const float* x, std::int64_t count, std::uint16_t* lo, std::uint16_t* mid,
                           std::uint16_t* hi) {
  // Truncation (not rounding) keeps each remainder exact and can never overflow to inf.
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint16_t h = upper_half(x[i]);
    const float r1 = x[i] - bf16_to_f32(h);
    const std::uint16_t m = upper_half(r1);
    hi[i] = h;
    mid[i] = m;
    lo[i] = upper_half(r1 - bf16_to_f32(m));
  }
}

std::unique_ptr<LinearBackend> make_bf16x3_backend() { return std::make_unique<Bf16x3Backend>(); }

}  // namespace attngeom
