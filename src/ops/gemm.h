#pragma once
// The GEMM seam. Every matrix product in the engine goes through a library (oneDNN);
// none is hand-written. `LinearBackend` is where precision is chosen: the fp32
// reference path here, a bf16 fast path behind the same interface.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "ops/tensor_view.h"

namespace attngeom {

enum class Precision { kFp32, kBf16 };
std::string_view precision_name(Precision precision);

// How fp32 runs multiply by bf16-stored weights: oneDNN sgemm on widened weights, or
// three exact bf16 products on AMX (bf16x3; same maths, three bf16 products for each one).
enum class Fp32Matmul { kSgemm, kBf16x3 };

// C[M, N] = alpha * op(A) op(B) + beta * C, row-major fp32 (oneDNN sgemm).
// Runs single-threaded when called inside an OpenMP parallel region.
void gemm_f32(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
              std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc);

// One product of a shared input x: y[rows, weight->rows] = x[rows, weight->cols] * weight^T.
struct LinearOutput {
  const TensorView* weight;
  float* y;
};

// The input of linear layers, x[rows, cols] in fp32: stored, or produced on demand. A produced
// input (an RMS norm, a gated activation) reaches a bf16 backend block by block, converted
// while in cache, so the full fp32 x is never written; an fp32 backend has it written to
// fp32_scratch.
struct LinearInput {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  const float* stored = nullptr;  // [rows, cols], or null: produced
  // Writes rows [begin, end) of x to out[end - begin, cols]. Called from several threads at
  // once, on disjoint rows.
  std::function<void(std::int64_t begin, std::int64_t end, float* out)> produce;
  float* fp32_scratch = nullptr;  // [rows, cols] where a backend that multiplies in fp32 writes a produced x
};
// x in fp32, whole: the stored rows, or x produced into fp32_scratch.
const float* fp32_rows(const LinearInput& x);

class LinearBackend {
 public:
  virtual ~LinearBackend() = default;
  virtual Precision precision() const = 0;
  // The matmul kernel, recorded in outputs: onednn-sgemm, onednn-bf16x3 or onednn-bf16.
  virtual std::string_view kernel() const = 0;
  // y[rows, w.rows] = x[rows, w.cols] * w^T, with w stored as [out, in].
  void linear(const float* x, std::int64_t rows, const TensorView& w, float* y) {
    const LinearOutput output{&w, y};
    linear_products(LinearInput{rows, w.cols, x, {}, nullptr}, {&output, 1});
  }
  // Every product of one input (q, k, v; gate, up), each as linear() computes it from the same
  // x: a backend converts x to its input format once. All weights have x's width.
  virtual void linear_products(const LinearInput& x, std::span<const LinearOutput> outputs) = 0;
};

// The exact reference path: fp32 maths; bf16/f16 weights are widened block by block
// as they are used (bounded scratch), f32 weights are used in place.
std::unique_ptr<LinearBackend> make_fp32_backend();

// The fast path: bf16 activations and weights, fp32 accumulation and output
// (oneDNN matmul; AMX where present). Weights stored as bf16 are used in place.
std::unique_ptr<LinearBackend> make_bf16_backend();

// fp32 maths on AMX: each fp32 activation split exactly into three bf16 terms, each
// term times the bf16 weights exact, accumulated in fp32. Weights stored as F32/F16
// are not bf16-exact and take the sgemm path.
std::unique_ptr<LinearBackend> make_bf16x3_backend();
// x[count] -> lo, mid, hi [count] with x == hi + mid + lo exactly for every finite x of
// magnitude at least 2^-110 (smaller remainders fall below fp32's normals).
void split_into_bf16_terms(const float* x, std::int64_t count, std::uint16_t* lo, std::uint16_t* mid,
                           std::uint16_t* hi);

// `weights`: the checkpoint's dtype. bf16x3 on F32/F16 weights would run sgemm for every
// product, so it is sgemm from the start (and recorded as such).
std::unique_ptr<LinearBackend> make_backend(Precision precision, Fp32Matmul fp32_matmul, DType weights);

// Whether oneDNN will use AMX on this CPU (what the deviation screen keys on).
bool cpu_has_amx();
// Whether oneDNN's bf16 matmul outruns its sgemm here (what `--precision auto` keys on): with
// AMX, or with AVX512-BF16 on AMD, whose bf16 dot products run at twice the fp32 FMA's rate.
bool cpu_has_fast_bf16_matmul();
// Whether oneDNN has a bf16 matmul on this CPU at all (AVX-512 or later; emulated without
// AVX512-BF16): what the bf16 and bf16x3 kernels need.
bool cpu_has_bf16_matmul();

}  // namespace attngeom
