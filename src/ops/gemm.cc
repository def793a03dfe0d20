#include "ops/gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <vector>

#include "util/error.h"

namespace attngeom {

std::string_view precision_name(Precision precision) { return precision == Precision::kFp32 ? "fp32" : "bf16"; }

void gemm_f32(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
              std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
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
      gemm_f32(false, true, rows, w.rows, w.cols, 1.0f, x, w.cols, static_cast<const float*>(w.data), w.cols, 0.0f, y,
               w.rows);
      return;
    }
    // Widen a block of output rows by input columns, then multiply it into y's columns; a deep
    // product (in > kBlockCols) adds up its column blocks. Blocks keep their full kBlockRows
    // rows at any depth: sgemm packs x afresh on every call, so fewer rows per call would
    // repack the same x more often.
    const std::int64_t column_blocks = (w.cols + kBlockCols - 1) / kBlockCols;
    const std::int64_t block_cols = (w.cols + column_blocks - 1) / column_blocks;  // even split
    const std::size_t element = dtype_size(w.dtype);
    widened_.resize(static_cast<std::size_t>(std::min(kBlockRows, w.rows) * block_cols));  // [block rows, block cols]
    for (std::int64_t r0 = 0; r0 < w.rows; r0 += kBlockRows) {
      const std::int64_t nr = std::min(kBlockRows, w.rows - r0);
      for (std::int64_t c0 = 0; c0 < w.cols; c0 += block_cols) {
        const std::int64_t nc = std::min(block_cols, w.cols - c0);
#pragma omp parallel for schedule(static)
        for (std::int64_t r = 0; r < nr; ++r) {
          widen_to_f32(w.dtype, static_cast<const std::uint8_t*>(w.row(r0 + r)) + c0 * element,
                       widened_.data() + r * nc, static_cast<std::size_t>(nc));
        }
        gemm_f32(false, true, rows, nr, nc, 1.0f, x + c0, w.cols, widened_.data(), nc, c0 == 0 ? 0.0f : 1.0f, y + r0,
                 w.rows);
      }
    }
  }

  static constexpr std::int64_t kBlockRows = 1024;
  static constexpr std::int64_t kBlockCols = 4096;  // with kBlockRows, 16 MiB of fp32
  std::vector<float> widened_;
};

}  // namespace

const float* fp32_rows(const LinearInput& x) {
  if (x.stored != nullptr) return x.stored;
  x.produce(0, x.rows, x.fp32_scratch);
  return x.fp32_scratch;
}

std::unique_ptr<LinearBackend> make_fp32_backend() { return std::make_unique<Fp32Backend>(); }

}  // namespace attngeom
