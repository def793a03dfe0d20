#pragma once
// The selection metrics of docs/method.md section 2 on a GPU, for many rows at once: the sort
// of each row's weights, s_N over the N grid, every projection <v_p, s_N>, and every metric at
// each N, with the CPU's arithmetic in the CPU's order (ops/cuda_selection_kernels.h), so that
// each row's metrics equal geometry::selection_metrics's with the direct method, bit for bit;
// and, when asked, the reconstructed envelopes R1 and R2 of section 4
// (ops/cuda_envelope_kernels.h), equal to geometry::reconstructed_envelopes's (R2's tail
// probabilities up to their last bits: exp differs); and each row's mass statistics and
// magnitudes (geometry/mass_step.h; the entropy up to its last bits: log differs). Built only
// with CUDA; no CUDA type here.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "geometry/envelope_point.h"
#include "geometry/mass_step.h"
#include "geometry/selection_point.h"

namespace attngeom {

// Rows of weights over the keys of value heads, in host memory.
struct SelectionInputs {
  const float* values = nullptr;  // [heads, seq, dim] v by key, fp32
  int heads = 0;
  int seq = 0;
  int dim = 0;
  const float* alpha = nullptr;              // [rows, seq]: row r over keys 0..keys[r]-1
  std::span<const int> keys;                 // [rows] M of each row, in 2..seq
  std::span<const int> value_head;           // [rows] the value head each row reads
  std::span<const std::size_t> n_values;     // ascending, at most 512; row r takes those below keys[r]
  std::span<const double> normalised_radii;  // ascending, >= 0
};

// The envelopes of each row, asked for beside its metrics: inputs [rows], outputs [rows, grid],
// entry (r, g) written for each N = n_values[g] < keys[r].
struct EnvelopeRequest {
  std::span<const double> beta;    // each row's cosine model: c_il = exp(-beta |i - l|) ...
  std::span<const double> rho_0;   // ... and c_0l = rho_0 (|rho_0| <= 1, beta >= 0)
  std::span<const double> eta;     // R1's bound on |delta|, finite and >= 0
  std::span<const double> sigma2;  // R2's variance proxy, > 0
  double delta = 0.05;             // R2's violation probability at each N, in (0, 1)
  std::span<geometry::EnvelopePoint> r1;
  std::span<geometry::EnvelopePoint> r2;
  std::span<geometry::SeparationBound> separation;
};

// Each row's mass statistics and magnitudes, asked for beside its metrics: outputs [rows].
struct MassRequest {
  geometry::MassOptions options;
  std::span<geometry::MassStats> mass;
  std::span<geometry::HeadMagnitudes> magnitudes;
};

class CudaSelection {
 public:
  // The rows' working memory of one chunk stays within chunk_bytes (always one row's): the more
  // rows a chunk holds, the more of them the GPU evaluates at once (a thread block per row and N),
  // and the fewer chunks follow one another.
  static constexpr std::uint64_t kDefaultChunkBytes = std::uint64_t{4} << 30;

  // Opens GPU `device` on the calling thread; every call selects it again on its own thread.
  explicit CudaSelection(int device, std::uint64_t chunk_bytes = kDefaultChunkBytes);
  ~CudaSelection();
  CudaSelection(const CudaSelection&) = delete;
  CudaSelection& operator=(const CudaSelection&) = delete;

  // points [rows, n_values.size()] and curves [rows, n_values.size(), radii]: entry (r, g) is
  // written for each N = n_values[g] < keys[r], the rest is left as it is. Returns when done.
  void compute(const SelectionInputs& in, std::span<geometry::SelectionPoint> points,
               std::span<geometry::BallScores> curves, const EnvelopeRequest* envelopes = nullptr,
               const MassRequest* mass = nullptr);

  // GPU memory compute() takes at most for rows of up to `keys` keys, envelopes and mass included.
  static std::uint64_t bytes(int heads, int seq, int dim, int keys, int rows, int grid, int radii,
                             std::uint64_t chunk_bytes = kDefaultChunkBytes);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace attngeom
