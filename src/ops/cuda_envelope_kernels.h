#pragma once
// The reconstructed envelopes R1 and R2 on a GPU (docs/method.md section 4) for the rows of a
// selection batch (cuda_selection_kernels.h), once position_rows has run: a thread block per
// (row, N) runs geometry/envelope_step.h as the CPU's reconstructed_envelopes does, in the
// CPU's order wherever that order makes the bits. Plain C++17 interface; nvcc compiles the
// definitions (cuda_envelope_kernels.cu).
#include <cuda_runtime_api.h>

#include <cstddef>

#include "geometry/envelope_point.h"
#include "geometry/envelope_step.h"
#include "ops/cuda_selection_kernels.h"

namespace attngeom::cuda {

struct EnvelopeRows {
  const double* decay = nullptr;   // [rows] exp(-beta) of each row's cosine model
  const double* rho_0 = nullptr;   // [rows]
  const double* eta = nullptr;     // [rows] R1's bound on |delta|
  const double* sigma2 = nullptr;  // [rows] R2's variance proxy, > 0
  // [rows, grid, 3] R2's terms of supports nonzero - 1, nonzero, nonzero + 1 at each N, nonzero
  // = #{alpha != 0 in I_N} (only those >= 2 are read).
  const geometry::SupportTerm* terms = nullptr;
  void* scratch = nullptr;                          // envelope_scratch_bytes(size) per (row, N)
  geometry::EnvelopePoint* r1 = nullptr;            // [rows, grid]
  geometry::EnvelopePoint* r2 = nullptr;            // [rows, grid]
  geometry::SeparationBound* separation = nullptr;  // [rows, grid]
};

// Bytes of working memory one (row, N) takes for rows of up to `size` keys.
std::size_t envelope_scratch_bytes(int size);

// r1, r2 and separation at every (row, N < keys[r]).
cudaError_t evaluate_envelopes(const SelectionRows& b, const EnvelopeRows& e, cudaStream_t stream);

}  // namespace attngeom::cuda
