#include "ops/cuda_selection.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/cuda_envelope_kernels.h"
#include "ops/cuda_memory.h"
#include "ops/cuda_selection_kernels.h"

namespace attngeom {
namespace {

using cuda::check;

// The per-row memory of one chunk of rows stays within this (always at least one row's).
constexpr std::uint64_t kChunkBudget = std::uint64_t{1} << 30;

std::uint64_t bytes_per_row(int size, int dim, int grid, int radii) {
  const auto m = static_cast<std::uint64_t>(size);
  const auto g = static_cast<std::uint64_t>(grid);
  // alpha, sort keys and order (in and out): 4-byte words; alpha, ||v||^2 and minima by position: doubles.
  return m * (5 * 4 + 3 * 8) + 2 * 4 + 2 * 4 + 4 + g * static_cast<std::uint64_t>(dim) * 8 + g * m * 8 +
         g * cuda::selection_scratch_bytes(size) +
         g * (sizeof(geometry::SelectionPoint) + static_cast<std::uint64_t>(radii) * sizeof(geometry::BallScores)) + 4 +
         4 * 8 +
         g * (cuda::envelope_scratch_bytes(size) + 2 * sizeof(geometry::EnvelopePoint) +
              sizeof(geometry::SeparationBound) + 3 * sizeof(geometry::SupportTerm));
}

int rows_per_chunk(int rows, int size, int dim, int grid, int radii) {
  return static_cast<int>(std::clamp<std::uint64_t>(kChunkBudget / bytes_per_row(size, dim, grid, radii), 1,
                                                    static_cast<std::uint64_t>(rows)));
}

// R2's terms of supports nonzero - 1 .. nonzero + 1 at each N of each row of a chunk, from the
// same function as the CPU's (geometry::support_term): [rows, grid, 3].
std::vector<geometry::SupportTerm> support_terms(const SelectionInputs& in, const EnvelopeRequest& request,
                                                 std::size_t first, std::span<const int> nonzero) {
  const std::size_t grid = in.n_values.size();
  std::vector<geometry::SupportTerm> terms(nonzero.size() * grid * 3);
  for (std::size_t r = 0; r < nonzero.size(); ++r) {
    const auto keys = static_cast<std::size_t>(in.keys[first + r]);
    for (std::size_t g = 0; g < grid && in.n_values[g] < keys; ++g) {
      const std::size_t nz = std::min(in.n_values[g], static_cast<std::size_t>(nonzero[r]));
      for (std::size_t j = 0; j < 3; ++j) {
        // Support nz - 1 + j, kept as nz + j - 1 so that nz = 0 does not wrap; read from 2 up.
        if (nz + j < 3) continue;
        terms[(r * grid + g) * 3 + j] = geometry::support_term(nz + j - 1, request.sigma2[first + r], request.delta,
                                                               keys, static_cast<std::size_t>(in.dim));
      }
    }
  }
  return terms;
}

}  // namespace

struct CudaSelection::State {
  int device = 0;
  cudaStream_t stream = nullptr;
  cuda::Scratch<float> values;                  // [heads, seq, dim]
  cuda::Scratch<double> key_sq_norms;           // [heads, seq]
  cuda::Scratch<int> n_values;                  // [grid]
  cuda::Scratch<double> radii;                  // [radii]
  cuda::Scratch<float> alpha;                   // [chunk, size]
  cuda::Scratch<int> keys, value_head;          // [chunk]
  cuda::Scratch<int> begin, end;                // [chunk]
  cuda::Scratch<float> sort_keys, sorted_keys;  // [chunk, size]
  cuda::Scratch<int> order, sorted_order;       // [chunk, size]
  cuda::Scratch<char> sort_temp;
  cuda::Scratch<double> by_position;                    // [3, chunk, size] alpha, ||v||^2, minima
  cuda::Scratch<int> ends;                              // [chunk, 2]
  cuda::Scratch<double> sums;                           // [chunk, grid, dim]
  cuda::Scratch<double> dots;                           // [chunk, grid, size]
  cuda::Scratch<char> scratch;                          // [chunk, grid] evaluations
  cuda::Scratch<geometry::SelectionPoint> points;       // [chunk, grid]
  cuda::Scratch<geometry::BallScores> curves;           // [chunk, grid, radii]
  cuda::Scratch<int> nonzero;                           // [chunk]
  cuda::Scratch<double> row_inputs;                     // [4, chunk] decay, rho_0, eta, sigma2
  cuda::Scratch<geometry::SupportTerm> terms;           // [chunk, grid, 3]
  cuda::Scratch<char> envelope_scratch;                 // [chunk, grid] evaluations
  cuda::Scratch<geometry::EnvelopePoint> r1, r2;        // [chunk, grid]
  cuda::Scratch<geometry::SeparationBound> separation;  // [chunk, grid]

  void use_device() const { check(cudaSetDevice(device), "cudaSetDevice"); }
};

CudaSelection::CudaSelection(int device) : state_(std::make_unique<State>()) {
  state_->device = device;
  state_->use_device();
  check(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
}

CudaSelection::~CudaSelection() {
  cudaStreamSynchronize(state_->stream);
  cudaStreamDestroy(state_->stream);
}

std::uint64_t CudaSelection::bytes(int heads, int seq, int dim, int keys, int rows, int grid, int radii) {
  const auto chunk = static_cast<std::uint64_t>(rows_per_chunk(rows, keys, dim, grid, radii));
  const std::uint64_t values = static_cast<std::uint64_t>(heads) * static_cast<std::uint64_t>(seq) *
                               (static_cast<std::uint64_t>(dim) * sizeof(float) + sizeof(double));
  // The segmented sort's own memory is about one more copy of its keys and order.
  const std::uint64_t sort = chunk * static_cast<std::uint64_t>(keys) * 8;
  return values + chunk * bytes_per_row(keys, dim, grid, radii) + sort;
}

void CudaSelection::compute(const SelectionInputs& in, std::span<geometry::SelectionPoint> points,
                            std::span<geometry::BallScores> curves, const EnvelopeRequest* envelopes) {
  const int rows = static_cast<int>(in.keys.size());
  const int grid = static_cast<int>(in.n_values.size());
  const int radii = static_cast<int>(in.normalised_radii.size());
  ATTNGEOM_CHECK(rows > 0 && grid > 0 && in.value_head.size() == in.keys.size() &&
                 points.size() == static_cast<std::size_t>(rows) * grid &&
                 curves.size() == points.size() * static_cast<std::size_t>(radii));
  const int size = *std::max_element(in.keys.begin(), in.keys.end());
  ATTNGEOM_CHECK(size <= in.seq && *std::min_element(in.keys.begin(), in.keys.end()) >= 2);
  ATTNGEOM_CHECK(!envelopes || (envelopes->beta.size() == in.keys.size() && envelopes->rho_0.size() == in.keys.size() &&
                                envelopes->eta.size() == in.keys.size() && envelopes->sigma2.size() == in.keys.size() &&
                                envelopes->r1.size() == points.size() && envelopes->r2.size() == points.size() &&
                                envelopes->separation.size() == points.size()));
  State& s = *state_;
  s.use_device();
  const auto dim = static_cast<std::size_t>(in.dim);
  const auto seq = static_cast<std::size_t>(in.seq);
  const std::span<const float> values(in.values, static_cast<std::size_t>(in.heads) * seq * dim);
  s.values.upload(values, s.stream);
  s.key_sq_norms.at_least(static_cast<std::size_t>(in.heads) * seq);
  check(cuda::squared_norms(s.values.data(), in.heads, in.seq, in.dim, s.key_sq_norms.data(), s.stream), "value norms");
  const std::vector<int> n_values(in.n_values.begin(), in.n_values.end());
  s.n_values.upload(std::span<const int>(n_values), s.stream);
  s.radii.upload(in.normalised_radii, s.stream);

  const int chunk = rows_per_chunk(rows, size, in.dim, grid, radii);
  const auto area = static_cast<std::size_t>(chunk) * static_cast<std::size_t>(size);  // [chunk, size]
  const auto evaluations = static_cast<std::size_t>(chunk) * static_cast<std::size_t>(grid);
  cuda::SelectionRows b;
  b.size = size;
  b.dim = in.dim;
  b.values = s.values.data();
  b.value_seq = in.seq;
  b.key_sq_norms = s.key_sq_norms.data();
  b.grid = grid;
  b.n_values = s.n_values.data();
  b.radius_count = radii;
  b.normalised_radii = s.radii.data();
  b.sort_keys = s.sort_keys.at_least(area);
  b.order = s.order.at_least(area);
  double* by_position = s.by_position.at_least(3 * area);
  b.alpha = by_position;
  b.sq_norms = by_position + area;
  b.weighted_norm_min = by_position + 2 * area;
  b.ends = s.ends.at_least(2 * static_cast<std::size_t>(chunk));
  b.nonzero = s.nonzero.at_least(static_cast<std::size_t>(chunk));
  b.sums = s.sums.at_least(evaluations * dim);
  b.dots = s.dots.at_least(evaluations * static_cast<std::size_t>(size));
  b.scratch = s.scratch.at_least(evaluations * cuda::selection_scratch_bytes(size));
  b.points = s.points.at_least(evaluations);
  b.curves = s.curves.at_least(std::max<std::size_t>(evaluations * static_cast<std::size_t>(radii), 1));
  float* sorted_keys = s.sorted_keys.at_least(area);
  int* sorted_order = s.sorted_order.at_least(area);
  float* alpha = s.alpha.at_least(area);
  int* begin = s.begin.at_least(static_cast<std::size_t>(chunk));
  int* end = s.end.at_least(static_cast<std::size_t>(chunk));
  std::vector<geometry::SelectionPoint> host_points(points.size());
  std::vector<geometry::BallScores> host_curves(curves.size());
  cuda::EnvelopeRows e;
  std::vector<double> row_inputs;                          // [4, chunk]
  std::vector<int> nonzero;                                // [chunk]
  std::vector<geometry::EnvelopePoint> host_r1, host_r2;   // [rows, grid]
  std::vector<geometry::SeparationBound> host_separation;  // [rows, grid]
  if (envelopes) {
    e.scratch = s.envelope_scratch.at_least(evaluations * cuda::envelope_scratch_bytes(size));
    e.r1 = s.r1.at_least(evaluations);
    e.r2 = s.r2.at_least(evaluations);
    e.separation = s.separation.at_least(evaluations);
    host_r1.resize(points.size());
    host_r2.resize(points.size());
    host_separation.resize(points.size());
  }

  for (int r0 = 0; r0 < rows; r0 += chunk) {
    b.rows = std::min(chunk, rows - r0);
    const auto first = static_cast<std::size_t>(r0);
    const auto count = static_cast<std::size_t>(b.rows);
    b.keys = s.keys.upload(in.keys.subspan(first, count), s.stream);
    b.value_head = s.value_head.upload(in.value_head.subspan(first, count), s.stream);
    // Keys 0..size-1 of each row, whose weights lie seq apart.
    check(cudaMemcpy2DAsync(alpha, static_cast<std::size_t>(size) * sizeof(float), in.alpha + first * seq,
                            seq * sizeof(float), static_cast<std::size_t>(size) * sizeof(float), count,
                            cudaMemcpyHostToDevice, s.stream),
          "copy the attention rows to the GPU");
    check(cuda::prepare_sort(b, alpha, begin, end, s.stream), "selection order");
    std::size_t temp_bytes = 0;
    check(cuda::sort_rows(nullptr, temp_bytes, b, begin, end, sorted_keys, sorted_order, s.stream),
          "selection order (sort memory)");
    void* temp = s.sort_temp.at_least(std::max<std::size_t>(temp_bytes, 1));
    check(cuda::sort_rows(temp, temp_bytes, b, begin, end, sorted_keys, sorted_order, s.stream), "selection order");
    check(cuda::position_rows(b, sorted_keys, sorted_order, s.stream), "selection sums and projections");
    check(cuda::evaluate_rows(b, s.stream), "selection metrics");
    const std::size_t done = count * static_cast<std::size_t>(grid);
    if (envelopes) {
      nonzero.resize(count);
      check(cudaMemcpyAsync(nonzero.data(), b.nonzero, count * sizeof(int), cudaMemcpyDeviceToHost, s.stream),
            "copy the nonzero counts to the host");
      check(cudaStreamSynchronize(s.stream), "selection metrics");
      row_inputs.resize(4 * count);
      for (std::size_t r = 0; r < count; ++r) {
        row_inputs[r] = std::exp(-envelopes->beta[first + r]);  // as ModelSweep takes it
        row_inputs[count + r] = envelopes->rho_0[first + r];
        row_inputs[2 * count + r] = envelopes->eta[first + r];
        row_inputs[3 * count + r] = envelopes->sigma2[first + r];
      }
      const double* inputs = s.row_inputs.upload(std::span<const double>(row_inputs), s.stream);
      e.decay = inputs;
      e.rho_0 = inputs + count;
      e.eta = inputs + 2 * count;
      e.sigma2 = inputs + 3 * count;
      const std::vector<geometry::SupportTerm> terms = support_terms(in, *envelopes, first, nonzero);
      e.terms = s.terms.upload(std::span<const geometry::SupportTerm>(terms), s.stream);
      check(cuda::evaluate_envelopes(b, e, s.stream), "reconstructed envelopes");
      check(cudaMemcpyAsync(host_r1.data() + first * grid, e.r1, done * sizeof(geometry::EnvelopePoint),
                            cudaMemcpyDeviceToHost, s.stream),
            "copy the envelopes to the host");
      check(cudaMemcpyAsync(host_r2.data() + first * grid, e.r2, done * sizeof(geometry::EnvelopePoint),
                            cudaMemcpyDeviceToHost, s.stream),
            "copy the envelopes to the host");
      check(cudaMemcpyAsync(host_separation.data() + first * grid, e.separation,
                            done * sizeof(geometry::SeparationBound), cudaMemcpyDeviceToHost, s.stream),
            "copy the envelopes to the host");
    }
    check(cudaMemcpyAsync(host_points.data() + first * grid, b.points, done * sizeof(geometry::SelectionPoint),
                          cudaMemcpyDeviceToHost, s.stream),
          "copy the selection metrics to the host");
    check(cudaMemcpyAsync(host_curves.data() + first * grid * radii, b.curves,
                          done * static_cast<std::size_t>(radii) * sizeof(geometry::BallScores), cudaMemcpyDeviceToHost,
                          s.stream),
          "copy the selection metrics to the host");
    // The next chunk reuses every buffer: wait for this one's copies.
    check(cudaStreamSynchronize(s.stream), "selection metrics");
  }
  for (int r = 0; r < rows; ++r) {
    for (int g = 0; g < grid; ++g) {
      if (in.n_values[static_cast<std::size_t>(g)] >= static_cast<std::size_t>(in.keys[static_cast<std::size_t>(r)]))
        continue;
      const std::size_t at = static_cast<std::size_t>(r) * grid + static_cast<std::size_t>(g);
      points[at] = host_points[at];
      std::copy_n(host_curves.begin() + static_cast<std::ptrdiff_t>(at * radii), radii,
                  curves.begin() + static_cast<std::ptrdiff_t>(at * radii));
      if (envelopes) {
        envelopes->r1[at] = host_r1[at];
        envelopes->r2[at] = host_r2[at];
        envelopes->separation[at] = host_separation[at];
      }
    }
  }
}

}  // namespace attngeom
