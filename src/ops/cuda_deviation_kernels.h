#pragma once
// The kernels of the pair-deviation screen on a GPU (ops/cuda_pair_deviations.h) behind a plain
// C++17 interface; nvcc compiles their definitions (cuda_deviation_kernels.cu). Every pointer
// is device memory; every call is an asynchronous launch on `stream` that returns its launch
// error. Everything is in double, as geometry's cosine_deviation computes it from a double Gram.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace attngeom::cuda {

// dst[i] = double(src[i])
cudaError_t widen_to_double(const float* src, double* dst, std::int64_t count, cudaStream_t stream);

// How a batch's rows take their pairs, and the triangle of each Gram matrix that it reads
// (column-major, as cuBLAS leaves one symmetric product): each row its own pairs, reading
// gram[i * size + l] for i < l (the lower triangle); or one walk per lag for all rows
// (geometry/lag_walk_step.h), reading gram[l * size + i] (the upper), keys ascending.
enum class DeviationPass { kEachRow, kLagWalk };

// The rows of one batch: `rows` key prefixes 0..keys[r]-1 of each of `matrices` Gram matrices
// gram [matrices, size, size] (symmetric, or one triangle as the pass reads it), with the
// cosine model of each (matrix, row).
struct DeviationRows {
  const double* gram = nullptr;  // [matrices, size, size]
  int matrices = 0;
  int size = 0;                   // keys of the largest row
  int rows = 0;                   // row r reads keys 0..keys[r]-1
  const int* keys = nullptr;      // [rows]
  const double* beta = nullptr;   // [matrices, rows] the model's content decay
  const double* rho_0 = nullptr;  // [matrices, rows] the model's sink cosine
  double* norms = nullptr;        // [matrices, size] scratch: sqrt of the Gram's diagonal
  double* partial = nullptr;      // [matrices, rows, strips, 3] scratch (deviation_partial_count)
};

// How many doubles DeviationRows::partial holds for one matrix.
std::int64_t deviation_partial_count(int size, int rows);

// For each (matrix, row): over the pairs i < l < keys[r] whose vectors are both non-zero,
// delta = gram_il / (||v_i|| ||v_l||) - c_il with c_0l = rho_0 and c_il = exp(-beta (l - i)):
// totals [matrices, rows, 3] = max |delta|, sum delta^2, pairs. The sums run in a fixed order,
// so a batch gives the same bits every time. Either pass takes the same pairs; max |delta| is
// the same but for each triangle's own rounding of the Gram.
cudaError_t cosine_deviation_totals(const DeviationRows& batch, DeviationPass pass, double* totals,
                                    cudaStream_t stream);

}  // namespace attngeom::cuda
