#include "ops/elementwise.h"

#include <algorithm>
#include <cmath>

namespace attngeom {

namespace {

// Per row r of x [rows, dim]: mean (0 unless centred) and 1 / sqrt(mean((x - mean)^2) + eps),
// both in double, then yr[i] = finish(xr[i], mean, inv_scale, i).
template <class Finish>
void normalize_rows(const float* x, std::int64_t rows, std::int64_t dim, bool centered, float eps, float* out,
                    Finish finish) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = out + r * dim;
    double mean = 0;
    if (centered) {
#pragma omp simd reduction(+ : mean)
      for (std::int64_t i = 0; i < dim; ++i) mean += xr[i];
      mean /= static_cast<double>(dim);
    }
    double sum_sq = 0;
    // Lanes of partial sums: a single double chain waits four cycles per element.
#pragma omp simd reduction(+ : sum_sq)
    for (std::int64_t i = 0; i < dim; ++i) sum_sq += (xr[i] - mean) * (xr[i] - mean);
    const double inv_scale = 1.0 / std::sqrt(sum_sq / static_cast<double>(dim) + eps);
    for (std::int64_t i = 0; i < dim; ++i) yr[i] = finish(xr[i], mean, inv_scale, i);
  }
}

}  // namespace

void rms_norm(const float* x, std::int64_t rows, std::int64_t dim, const float* weight, float offset, float eps,
              float* out) {
  normalize_rows(x, rows, dim, false, eps, out, [weight, offset](float v, double, double inv_rms, std::int64_t i) {
    return (v * static_cast<float>(inv_rms)) * (offset + weight[i]);
  });
}

void layer_norm(const float* x, std::int64_t rows, std::int64_t dim, const float* weight, const float* bias, float eps,
                float* out) {
  normalize_rows(x, rows, dim, true, eps, out, [weight, bias](float v, double mean, double inv_std, std::int64_t i) {
    return static_cast<float>((v - mean) * inv_std) * weight[i] + (bias != nullptr ? bias[i] : 0.0f);
  });
}

void make_rope_table(int seq, std::span<const double> inv_freq, double scale, float* table) {
  const auto half = static_cast<std::int64_t>(inv_freq.size());
  // Angles in double: an fp32 product p * inv_freq is off by ~p * 6e-8 rad, which at
  // a few hundred positions already moves attention probabilities by ~1e-5.
  for (std::int64_t i = 0; i < half; ++i) {
    for (std::int64_t p = 0; p < seq; ++p) {
      const double angle = static_cast<double>(p) * inv_freq[static_cast<std::size_t>(i)];
      table[p * 2 * half + i] = static_cast<float>(std::cos(angle) * scale);
      table[p * 2 * half + half + i] = static_cast<float>(std::sin(angle) * scale);
    }
  }
}

void apply_rope(float* x, int seq, int n_heads, int head_dim, int rotary_dim, const float* table) {
  const int half = rotary_dim / 2;
  const std::int64_t stride = static_cast<std::int64_t>(n_heads) * head_dim;
#pragma omp parallel for schedule(static)
  for (int p = 0; p < seq; ++p) {
    const float* c = table + static_cast<std::size_t>(p) * 2 * half;
    const float* s = c + half;
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + p * stride + static_cast<std::int64_t>(h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const float x1 = v[i];
        const float x2 = v[i + half];
        v[i] = x1 * c[i] - x2 * s[i];
        v[i + half] = x2 * c[i] + x1 * s[i];
      }
    }
  }
}

void add_in_place(float* x, const float* y, std::int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < count; ++i) x[i] += y[i];
}

void scale_in_place(float* x, std::int64_t count, float factor) {
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < count; ++i) x[i] *= factor;
}

void clamp_symmetric(float* x, std::int64_t count, float limit) {
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < count; ++i) x[i] = x[i] < -limit ? -limit : x[i] > limit ? limit : x[i];
}

void add_bias(float* x, std::int64_t rows, std::int64_t cols, const float* bias) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    float* xr = x + r * cols;
#pragma omp simd
    for (std::int64_t j = 0; j < cols; ++j) xr[j] += bias[j];
  }
}

}  // namespace attngeom
