#pragma once
// The GEMM seam. Every matrix product in the engine goes through a library (oneDNN);
// none is hand-written. `LinearBackend` is where precision is chosen: the fp32
// reference path here, a bf16 fast path behind the same interface.
#include <cstdint>
#include <memory>
#include <string_view>

#include "ops/tensor_view.h"

namespace attngeom {

enum class Precision { kFp32, kBf16 };
std::string_view precision_name(Precision precision);

// C[M, N] = alpha * op(A) op(B) + beta * C, row-major fp32 (oneDNN sgemm).
// Runs single-threaded when called inside an OpenMP parallel region.
void gemm_f32(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
              const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
              std::int64_t ldc);

class LinearBackend {
 public:
  virtual ~LinearBackend() = default;
  virtual Precision precision() const = 0;
  // y[rows, w.rows] = x[rows, w.cols] * w^T, with w stored as [out, in].
  virtual void linear(const float* x, std::int64_t rows, const TensorView& w, float* y) = 0;
};

// The exact reference path: fp32 maths; bf16/f16 weights are widened block by block
// as they are used (bounded scratch), f32 weights are used in place.
std::unique_ptr<LinearBackend> make_fp32_backend();

// The fast path: bf16 activations and weights, fp32 accumulation and output
// (oneDNN matmul; AMX where present). Weights stored as bf16 are used in place.
std::unique_ptr<LinearBackend> make_bf16_backend();
std::unique_ptr<LinearBackend> make_backend(Precision precision);

// Whether oneDNN will use AMX on this CPU (what `--precision auto` keys on).
bool cpu_has_amx();

}  // namespace attngeom
