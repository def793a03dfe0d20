// The ops whose time is transcendental functions: softmax_row (expf), soft_cap (tanhf) and
// the MLP activations (expf, tanhf, erff). This file alone is built with -ffast-math
// (src/CMakeLists.txt): only then does GCC turn these loops into glibc's vector math
// (libmvec, a few ulp), several times the scalar speed; attention and Gemma's GeGLU spent most of
// their non-GEMM time here. The flag is safe for this code: inputs are finite
// (non-finite weights are rejected at load), and the reassociated sums are what the simd
// reductions below allow anyway.
#include <algorithm>
#include <cmath>

#include "ops/elementwise.h"

namespace attngeom {

void softmax_row(float* row, std::int64_t n) {
  float max_value = row[0];
#pragma omp simd reduction(max : max_value)
  for (std::int64_t i = 1; i < n; ++i) max_value = row[i] > max_value ? row[i] : max_value;
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t i = 0; i < n; ++i) {
    const float e = std::exp(row[i] - max_value);
    row[i] = e;
    sum += e;
  }
  const float inv = static_cast<float>(1.0 / sum);
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) row[i] *= inv;
}

void soft_cap(float* x, std::int64_t count, float cap) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

namespace {

// out[i] = act(x[i]) * up(i): up(i) is the gate's partner, or 1 for a non-gated MLP.
template <class Up>
void activate(Activation activation, const float* x, Up up, float* out, std::int64_t count) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  switch (activation) {
    case Activation::kSilu:
#pragma omp parallel for simd schedule(static)
      for (std::int64_t i = 0; i < count; ++i) {
        // Capped below expf's overflow: under -ffast-math g / (1 + inf) may become inf * 0.
        out[i] = x[i] / (1.0f + std::exp(std::min(-x[i], 80.0f))) * up(i);
      }
      return;
    case Activation::kGeluTanh:
#pragma omp parallel for simd schedule(static)
      for (std::int64_t i = 0; i < count; ++i) {
        const float g = x[i];
        out[i] = 0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * (g + 0.044715f * g * g * g))) * up(i);
      }
      return;
    case Activation::kGeluErf:
#pragma omp parallel for simd schedule(static)
      for (std::int64_t i = 0; i < count; ++i) {
        out[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.7071067811865476f)) * up(i);
      }
      return;
    case Activation::kRelu:
#pragma omp parallel for simd schedule(static)
      for (std::int64_t i = 0; i < count; ++i) out[i] = std::max(x[i], 0.0f) * up(i);
      return;
  }
}

}  // namespace

void gated_activation(Activation activation, const float* gate, const float* up, float* out, std::int64_t count) {
  activate(
      activation, gate, [up](std::int64_t i) { return up[i]; }, out, count);
}

void activation(Activation activation, const float* x, float* out, std::int64_t count) {
  activate(
      activation, x, [](std::int64_t) { return 1.0f; }, out, count);
}

}  // namespace attngeom
