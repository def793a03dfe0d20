#pragma once
// The kernels of the selection metrics on a GPU (ops/cuda_selection.h) behind a plain C++17
// interface; nvcc compiles their definitions (cuda_selection_kernels.cu). Every pointer is
// device memory; every call is an asynchronous launch on `stream` that returns its launch
// error. Each step computes what geometry::selection_metrics computes on the CPU (the direct
// method), in the same order, with the same functions where they are shared
// (geometry/selection_step.h), so that both give the same bits.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "geometry/mass_step.h"
#include "geometry/selection_point.h"
#include "util/host_device.h"

namespace attngeom::cuda {

// One batch of rows: row r holds the weights of one (head, query) over keys 0..keys[r]-1 and
// reads the values of head value_head[r].
struct SelectionRows {
  int rows = 0;
  int size = 0;                          // the row stride of every [rows, size] array: keys[r] <= size
  int dim = 0;                           // d
  const int* keys = nullptr;             // [rows] M of each row
  const int* value_head = nullptr;       // [rows]
  const float* values = nullptr;         // [value heads, value_seq, dim] v by key
  int value_seq = 0;                     // keys of each value head, >= every keys[r]
  const double* key_sq_norms = nullptr;  // [value heads, value_seq] ||v||^2 (squared_norms)
  int grid = 0;                          // requested N values; row r takes those < keys[r]
  const int* n_values = nullptr;         // [grid] ascending
  int radius_count = 0;
  const double* normalised_radii = nullptr;  // [radius_count]
  // Filled in turn by the steps below.
  float* sort_keys = nullptr;                  // [rows, size] weights, then by position
  int* order = nullptr;                        // [rows, size] key numbers, then key at each position
  double* alpha = nullptr;                     // [rows, size] alpha by position
  double* sq_norms = nullptr;                  // [rows, size] ||v||^2 by position
  double* weighted_norm_min = nullptr;         // [rows, size]
  int* ends = nullptr;                         // [rows, 2] positions of keys 0 and M-1
  int* nonzero = nullptr;                      // [rows] #{alpha != 0} of each row
  double* sums = nullptr;                      // [rows, grid, dim] s_N
  double* dots = nullptr;                      // [rows, grid, size] <v_p, s_N> by position
  void* scratch = nullptr;                     // selection_scratch_bytes(size) per (row, N)
  geometry::SelectionPoint* points = nullptr;  // [rows, grid]
  geometry::BallScores* curves = nullptr;      // [rows, grid, radius_count]
};

// The (row, N) that thread block `block` of a launch over every (row, N) takes: row `row` at
// N = n_values[block % grid], with M = keys[row] (nothing to evaluate where N >= M).
struct Evaluation {
  int row = 0;
  int n = 0;
  int keys = 0;
};
ATTNGEOM_HD inline Evaluation evaluation_of(const SelectionRows& b, std::int64_t block) {
  Evaluation e;
  e.row = static_cast<int>(block / b.grid);
  e.n = b.n_values[block % b.grid];
  e.keys = b.keys[e.row];
  return e;
}

// Bytes of working memory one (row, N) evaluation takes for rows of up to `size` keys.
std::size_t selection_scratch_bytes(int size);

// key_sq_norms [heads, seq] = ||v||^2 of values [heads, seq, dim], summed as the CPU sums it.
cudaError_t squared_norms(const float* values, int heads, int seq, int dim, double* key_sq_norms, cudaStream_t stream);

// sort_keys and order of each row from alpha [rows, size] (key numbers in order; -0 as +0),
// and the segments [begin, end) of each row in them.
cudaError_t prepare_sort(const SelectionRows& b, const float* alpha, int* begin, int* end, cudaStream_t stream);

// Device memory the sort needs (temp_bytes), or the sort itself: each row's sort_keys
// descending, ties to the lower key (a stable radix sort), into sorted_keys and sorted_order.
cudaError_t sort_rows(void* temp, std::size_t& temp_bytes, const SelectionRows& b, const int* begin, const int* end,
                      float* sorted_keys, int* sorted_order, cudaStream_t stream);

// From the weights by key [rows, size] and the sorted weights and order: alpha (as given, -0
// included), sq_norms, weighted_norm_min, ends, nonzero, sums and dots.
cudaError_t position_rows(const SelectionRows& b, const float* alpha_by_key, const float* sorted_keys,
                          const int* sorted_order, cudaStream_t stream);

// Each row's mass statistics and magnitudes (geometry/mass_step.h) from its weights by key
// (alpha_by_key [rows, size]) and sorted (sorted_keys, from sort_rows): rest [rows, dim] one
// thread per coordinate, then mass [rows] and magnitudes [rows] one thread per row.
cudaError_t mass_rows(const SelectionRows& b, const float* alpha_by_key, const float* sorted_keys,
                      const geometry::MassOptions& options, double* rest, geometry::MassStats* mass,
                      geometry::HeadMagnitudes* magnitudes, cudaStream_t stream);

// The largest N that evaluate_rows takes: the default grid's (docs/method.md section 2).
constexpr int kMaxSelected = 512;

// points and curves at every (row, N < keys[r]), a thread block each; n_values at most
// kMaxSelected, normalised_radii ascending (at most some two thousand of them).
cudaError_t evaluate_rows(const SelectionRows& b, cudaStream_t stream);

}  // namespace attngeom::cuda
