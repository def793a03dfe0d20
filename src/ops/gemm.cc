#include "ops/gemm.h"

#include <algorithm>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

#include "util/error.h"

namespace attngeom {

std::string_view precision_name(Precision precision) {
  return precision == Precision::kFp32 ? "fp32" : "bf16";
}

void gemm_f32(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
              const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
              std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  const dnnl_status_t status =
      dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  ATTNGEOM_CHECK(status == dnnl_success);
}

namespace {

class Fp32Backend final : public LinearBackend {
 public:
  Precision precision() const override { return Precision::kFp32; }
  std::string_view kernel() const override { return "onednn-sgemm"; }

  void linear_products(const LinearInput& x, std::span<const LinearOutput> outputs) override {
    const float* fp32 = fp32_rows(x);
    for (const LinearOutput& output : outputs) {
      ATTNGEOM_CHECK(output.weight->cols == x.cols);
      multiply(fp32, x.rows, *output.weight, output.y);
    }
  }

 private:
  void multiply(const float* x, std::int64_t rows, const TensorView& w, float* y) {
    if (w.dtype == DType::kF32) {
      gemm_f32(false, true, rows, w.rows, w.cols, 1.0f, x, w.cols, static_cast<const float*>(w.data), w.cols, 0.0f,
               y, w.rows);
      return;
    }
    // Widen a block of output rows at a time, then multiply it into y's columns.
    const std::int64_t block_rows = std::max<std::int64_t>(1, kWidenBlockElems / w.cols);
    widened_.resize(static_cast<std::size_t>(std::min(block_rows, w.rows) * w.cols));  // [block, in]
    for (std::int64_t r0 = 0; r0 < w.rows; r0 += block_rows) {
      const std::int64_t nr = std::min(block_rows, w.rows - r0);
      widen_to_f32(w.dtype, w.row(r0), widened_.data(), static_cast<std::size_t>(nr * w.cols));
      gemm_f32(false, true, rows, nr, w.cols, 1.0f, x, w.cols, widened_.data(), w.cols, 0.0f, y + r0, w.rows);
    }
  }

  static constexpr std::int64_t kWidenBlockElems = 1 << 22;  // 16 MiB of fp32
  std::vector<float> widened_;
};

}  // namespace

const float* fp32_rows(const LinearInput& x) {
  if (x.stored != nullptr) return x.stored;
  x.produce(0, x.rows, x.home);
  return x.home;
}

std::unique_ptr<LinearBackend> make_fp32_backend() { return std::make_unique<Fp32Backend>(); }

}  // namespace attngeom
