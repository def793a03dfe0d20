// softmax_row, alone in its file because it is built with -ffast-math (src/CMakeLists.txt):
// only then does GCC turn the expf loop into glibc's vector expf (libmvec), about 5x the
// scalar speed, and attention spends most of its non-GEMM time here. The flag is safe for
// this code: inputs are finite scores (non-finite weights are rejected at load), and the
// reassociated sums are what the simd reductions below allow anyway.
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

}  // namespace attngeom
