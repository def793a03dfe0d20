#pragma once
// The kernels of the pair-deviation screen on a GPU (ops/cuda_pair_deviations.h) behind a plain
// C++17 interface; nvcc compiles their definitions (cuda_deviation_kernels.cu). Every pointer
// is device memory; every call is an asynchronous launch on `stream` that returns its launch
// error. Everything is in double, as geometry's cosine_deviation computes it from a double Gram.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "geometry/lag_walk_step.h"

namespace attngeom::cuda {

// dst[i] = double(src[i])
cudaError_t widen_to_double(const float* src, double* dst, std::int64_t count, cudaStream_t stream);

// norms[k] = ||values[k]||, values [count, dim], each sum of squares in the order of the coordinates.
cudaError_t value_norms(const double* values, std::int64_t count, int dim, double* norms, cudaStream_t stream);

// How a batch's rows take their pairs: each row its own pairs; or one walk per lag for all
// rows (geometry/lag_walk_step.h), keys ascending.
enum class DeviationPass { kEachRow, kLagWalk };

// A strip's width is a multiple of this, but for the last strip of a matrix.
constexpr int kDeviationStripAlign = 64;

// The rows of one batch and one strip of columns [first, end) of each of `matrices` Gram
// matrices: G(i, l) for i <= l < end at gram[m * gram_stride + (l - first) * end + i] (the
// upper triangle, column-major, with the rows 0..end-1 of those columns), with the cosine model
// of each (matrix, row). Strips are taken in order from first = 0 to end = size.
struct DeviationRows {
  const double* gram = nullptr;  // [matrices, end - first, end], gram_stride apart
  std::int64_t gram_stride = 0;
  int first = 0;
  int end = 0;
  int matrices = 0;
  int size = 0;                        // keys of the largest row
  int rows = 0;                        // row r reads keys 0..keys[r]-1
  const int* keys = nullptr;           // [rows]
  const double* beta = nullptr;        // [matrices, rows] the model's content decay
  const double* rho_0 = nullptr;       // [matrices, rows] the model's sink cosine
  const double* norms = nullptr;       // [matrices, size] ||v_k||
  double* partial = nullptr;           // [matrices, rows, parts, 3] scratch (deviation_partial_count)
  geometry::LagWalk* walks = nullptr;  // [matrices, size] scratch: each lag's walk between strips
};

// How many doubles DeviationRows::partial holds for one matrix.
std::int64_t deviation_partial_count(int size, int rows);

// The terms of every row's pairs (i, l), i < l < keys[r], l in the strip, both vectors non-zero:
// delta = G(i, l) / (||v_i|| ||v_l||) - c_il with c_0l = rho_0 and c_il = exp(-beta (l - i)).
// Each part of a row's terms is written in one strip: a block of columns, or with the lag
// walk, a block of lags in the strip that holds the row's last key.
cudaError_t add_strip_deviations(const DeviationRows& strip, DeviationPass pass, cudaStream_t stream);

// Once every strip is added: totals [matrices, rows, 3] = max |delta|, sum delta^2, pairs. The
// sums run in a fixed order, so a batch gives the same bits every time, whatever its strips.
cudaError_t deviation_totals(const DeviationRows& batch, DeviationPass pass, double* totals, cudaStream_t stream);

}  // namespace attngeom::cuda
