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

std::uint64_t bytes_per_row(int size, int dim, int grid, int radii) {
  const auto m = static_cast<std::uint64_t>(size);
  const auto g = static_cast<std::uint64_t>(grid);
  // alpha, sort keys and order (in and out): 4-byte words; alpha, ||v||^2 and minima by position: doubles.
  return m * (5 * 4 + 3 * 8) + 2 * 4 + 2 * 4 + 4 + g * static_cast<std::uint64_t>(dim) * 8 + g * m * 8 +
         g * cuda::selection_scratch_bytes(size) +
         g * (sizeof(geometry::SelectionPoint) + static_cast<std::uint64_t>(radii) * sizeof(geometry::BallScores)) + 4 +
         4 * 8 +
         g * (cuda::envelope_scratch_bytes(size) + 2 * sizeof(geometry::EnvelopePoint) +
              sizeof(geometry::SeparationBound) + 3 * sizeof(geometry::SupportTerm)) +
         static_cast<std::uint64_t>(dim) * 8 + sizeof(geometry::MassStats) + sizeof(geometry::HeadMagnitudes);
}

int rows_per_chunk(std::uint64_t chunk_bytes, int rows, int size, int dim, int grid, int radii) {
  return static_cast<int>(std::clamp<std::uint64_t>(chunk_bytes / bytes_per_row(size, dim, grid, radii), 1,
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
  std::uint64_t chunk_bytes = 0;
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
  cuda::Scratch<double> rest;                           // [chunk, dim]
  cuda::Scratch<geometry::MassStats> mass;              // [chunk]
  cuda::Scratch<geometry::HeadMagnitudes> magnitudes;   // [chunk]

  void use_device() const { check(cudaSetDevice(device), "cudaSetDevice"); }
  // The batch's arrays for chunks of up to `chunk` rows of up to `size` keys; the envelopes'.
  cuda::SelectionRows lay_out(const SelectionInputs& in, int size, int chunk);
  cuda::EnvelopeRows lay_out_envelopes(std::size_t evaluations, int size);
  // One chunk (b.rows rows from row `first`, keys and value heads uploaded): its rows sorted and
  // its metrics launched; then its envelopes (waits for the nonzero counts, for R2's terms).
  void select(const cuda::SelectionRows& b, const SelectionInputs& in, std::size_t first);
  void bound(const cuda::SelectionRows& b, cuda::EnvelopeRows& e, const SelectionInputs& in,
             const EnvelopeRequest& request, std::size_t first);
};

CudaSelection::CudaSelection(int device, std::uint64_t chunk_bytes) : state_(std::make_unique<State>()) {
  state_->device = device;
  state_->chunk_bytes = chunk_bytes;
  state_->use_device();
  check(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
}

CudaSelection::~CudaSelection() {
  cudaSetDevice(state_->device);  // its stream and memory (freed after this) are that GPU's, whichever thread ends it
  cudaStreamSynchronize(state_->stream);
  cudaStreamDestroy(state_->stream);
}

std::uint64_t CudaSelection::bytes(int heads, int seq, int dim, int keys, int rows, int grid, int radii,
                                   std::uint64_t chunk_bytes) {
  const auto chunk = static_cast<std::uint64_t>(rows_per_chunk(chunk_bytes, rows, keys, dim, grid, radii));
  const std::uint64_t values = static_cast<std::uint64_t>(heads) * static_cast<std::uint64_t>(seq) *
                               (static_cast<std::uint64_t>(dim) * sizeof(float) + sizeof(double));
  // The segmented sort's own memory is about one more copy of its keys and order.
  const std::uint64_t sort = chunk * static_cast<std::uint64_t>(keys) * 8;
  return values + chunk * bytes_per_row(keys, dim, grid, radii) + sort;
}

namespace {

void download(void* host, const void* device, std::size_t bytes, cudaStream_t stream, const char* what) {
  check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream), what);
}

}  // namespace

cuda::SelectionRows CudaSelection::State::lay_out(const SelectionInputs& in, int size, int chunk) {
  const int grid = static_cast<int>(in.n_values.size());
  const int radii = static_cast<int>(in.normalised_radii.size());
  const auto area = static_cast<std::size_t>(chunk) * static_cast<std::size_t>(size);  // [chunk, size]
  const auto evaluations = static_cast<std::size_t>(chunk) * static_cast<std::size_t>(grid);
  cuda::SelectionRows b;
  b.size = size;
  b.dim = in.dim;
  b.values = values.data();
  b.value_seq = in.seq;
  b.key_sq_norms = key_sq_norms.data();
  b.grid = grid;
  b.n_values = n_values.data();
  b.radius_count = radii;
  b.normalised_radii = this->radii.data();
  b.sort_keys = sort_keys.at_least(area);
  b.order = order.at_least(area);
  double* positions = by_position.at_least(3 * area);
  b.alpha = positions;
  b.sq_norms = positions + area;
  b.weighted_norm_min = positions + 2 * area;
  b.ends = ends.at_least(2 * static_cast<std::size_t>(chunk));
  b.nonzero = nonzero.at_least(static_cast<std::size_t>(chunk));
  b.sums = sums.at_least(evaluations * static_cast<std::size_t>(in.dim));
  b.dots = dots.at_least(evaluations * static_cast<std::size_t>(size));
  b.scratch = scratch.at_least(evaluations * cuda::selection_scratch_bytes(size));
  b.points = points.at_least(evaluations);
  b.curves = curves.at_least(std::max<std::size_t>(evaluations * static_cast<std::size_t>(radii), 1));
  sorted_keys.at_least(area);
  sorted_order.at_least(area);
  alpha.at_least(area);
  begin.at_least(static_cast<std::size_t>(chunk));
  end.at_least(static_cast<std::size_t>(chunk));
  return b;
}

cuda::EnvelopeRows CudaSelection::State::lay_out_envelopes(std::size_t evaluations, int size) {
  cuda::EnvelopeRows e;
  e.scratch = envelope_scratch.at_least(evaluations * cuda::envelope_scratch_bytes(size));
  e.r1 = r1.at_least(evaluations);
  e.r2 = r2.at_least(evaluations);
  e.separation = separation.at_least(evaluations);
  return e;
}

void CudaSelection::State::select(const cuda::SelectionRows& b, const SelectionInputs& in, std::size_t first) {
  const auto seq = static_cast<std::size_t>(in.seq);
  const auto row_bytes = static_cast<std::size_t>(b.size) * sizeof(float);
  // Keys 0..size-1 of each row, whose weights lie seq apart.
  check(cudaMemcpy2DAsync(alpha.data(), row_bytes, in.alpha + first * seq, seq * sizeof(float), row_bytes,
                          static_cast<std::size_t>(b.rows), cudaMemcpyHostToDevice, stream),
        "copy the attention rows to the GPU");
  check(cuda::prepare_sort(b, alpha.data(), begin.data(), end.data(), stream), "selection order");
  std::size_t temp_bytes = 0;
  check(cuda::sort_rows(nullptr, temp_bytes, b, begin.data(), end.data(), sorted_keys.data(), sorted_order.data(),
                        stream),
        "selection order (sort memory)");
  void* temp = sort_temp.at_least(std::max<std::size_t>(temp_bytes, 1));
  check(cuda::sort_rows(temp, temp_bytes, b, begin.data(), end.data(), sorted_keys.data(), sorted_order.data(), stream),
        "selection order");
  check(cuda::position_rows(b, alpha.data(), sorted_keys.data(), sorted_order.data(), stream),
        "selection sums and projections");
  check(cuda::evaluate_rows(b, stream), "selection metrics");
}

void CudaSelection::State::bound(const cuda::SelectionRows& b, cuda::EnvelopeRows& e, const SelectionInputs& in,
                                 const EnvelopeRequest& request, std::size_t first) {
  const auto count = static_cast<std::size_t>(b.rows);
  std::vector<int> host_nonzero(count);  // [chunk], for R2's support terms
  download(host_nonzero.data(), b.nonzero, count * sizeof(int), stream, "copy the nonzero counts to the host");
  check(cudaStreamSynchronize(stream), "selection metrics");
  std::vector<double> inputs(4 * count);  // [4, chunk] decay, rho_0, eta, sigma2
  for (std::size_t r = 0; r < count; ++r) {
    inputs[r] = std::exp(-request.beta[first + r]);  // as ModelSweep takes it
    inputs[count + r] = request.rho_0[first + r];
    inputs[2 * count + r] = request.eta[first + r];
    inputs[3 * count + r] = request.sigma2[first + r];
  }
  const double* device_inputs = row_inputs.upload(std::span<const double>(inputs), stream);
  e.decay = device_inputs;
  e.rho_0 = device_inputs + count;
  e.eta = device_inputs + 2 * count;
  e.sigma2 = device_inputs + 3 * count;
  const std::vector<geometry::SupportTerm> table = support_terms(in, request, first, host_nonzero);
  e.terms = terms.upload(std::span<const geometry::SupportTerm>(table), stream);
  check(cuda::evaluate_envelopes(b, e, stream), "reconstructed envelopes");
}

void CudaSelection::compute(const SelectionInputs& in, std::span<geometry::SelectionPoint> points,
                            std::span<geometry::BallScores> curves, const EnvelopeRequest* envelopes,
                            const MassRequest* mass) {
  const int rows = static_cast<int>(in.keys.size());
  const int grid = static_cast<int>(in.n_values.size());
  const int radii = static_cast<int>(in.normalised_radii.size());
  ATTNGEOM_CHECK(rows > 0 && grid > 0 && in.value_head.size() == in.keys.size() &&
                 points.size() == static_cast<std::size_t>(rows) * grid &&
                 curves.size() == points.size() * static_cast<std::size_t>(radii));
  const int size = *std::max_element(in.keys.begin(), in.keys.end());
  ATTNGEOM_CHECK(size <= in.seq && *std::min_element(in.keys.begin(), in.keys.end()) >= 2 &&
                 in.n_values.back() <= static_cast<std::size_t>(cuda::kMaxSelected));
  ATTNGEOM_CHECK(!envelopes || (envelopes->beta.size() == in.keys.size() && envelopes->rho_0.size() == in.keys.size() &&
                                envelopes->eta.size() == in.keys.size() && envelopes->sigma2.size() == in.keys.size() &&
                                envelopes->r1.size() == points.size() && envelopes->r2.size() == points.size() &&
                                envelopes->separation.size() == points.size()));
  ATTNGEOM_CHECK(!mass || (mass->mass.size() == in.keys.size() && mass->magnitudes.size() == in.keys.size()));
  State& s = *state_;
  s.use_device();
  const auto seq = static_cast<std::size_t>(in.seq);
  s.values.upload(std::span<const float>(in.values, static_cast<std::size_t>(in.heads) * seq * in.dim), s.stream);
  s.key_sq_norms.at_least(static_cast<std::size_t>(in.heads) * seq);
  check(cuda::squared_norms(s.values.data(), in.heads, in.seq, in.dim, s.key_sq_norms.data(), s.stream), "value norms");
  const std::vector<int> n_values(in.n_values.begin(), in.n_values.end());
  s.n_values.upload(std::span<const int>(n_values), s.stream);
  s.radii.upload(in.normalised_radii, s.stream);

  const int chunk = rows_per_chunk(s.chunk_bytes, rows, size, in.dim, grid, radii);
  cuda::SelectionRows b = s.lay_out(in, size, chunk);
  cuda::EnvelopeRows e;
  if (envelopes) e = s.lay_out_envelopes(static_cast<std::size_t>(chunk) * static_cast<std::size_t>(grid), size);
  // Every chunk's results, [rows, grid] (curves [rows, grid, radii]), before the valid ones are kept.
  std::vector<geometry::SelectionPoint> host_points(points.size());
  std::vector<geometry::BallScores> host_curves(curves.size());
  std::vector<geometry::EnvelopePoint> host_r1(envelopes ? points.size() : 0), host_r2(host_r1.size());
  std::vector<geometry::SeparationBound> host_separation(host_r1.size());
  for (int r0 = 0; r0 < rows; r0 += chunk) {
    b.rows = std::min(chunk, rows - r0);
    const auto first = static_cast<std::size_t>(r0);
    const auto count = static_cast<std::size_t>(b.rows);
    b.keys = s.keys.upload(in.keys.subspan(first, count), s.stream);
    b.value_head = s.value_head.upload(in.value_head.subspan(first, count), s.stream);
    s.select(b, in, first);
    const std::size_t done = count * static_cast<std::size_t>(grid);
    const std::size_t at = first * static_cast<std::size_t>(grid);
    if (envelopes) {
      s.bound(b, e, in, *envelopes, first);
      const char* what = "copy the envelopes to the host";
      download(host_r1.data() + at, e.r1, done * sizeof(geometry::EnvelopePoint), s.stream, what);
      download(host_r2.data() + at, e.r2, done * sizeof(geometry::EnvelopePoint), s.stream, what);
      download(host_separation.data() + at, e.separation, done * sizeof(geometry::SeparationBound), s.stream, what);
    }
    if (mass) {
      check(cuda::mass_rows(b, s.alpha.data(), s.sorted_keys.data(), mass->options,
                            s.rest.at_least(count * static_cast<std::size_t>(in.dim)), s.mass.at_least(count),
                            s.magnitudes.at_least(count), s.stream),
            "mass statistics and magnitudes");
      const char* what = "copy the mass statistics and magnitudes to the host";
      download(mass->mass.data() + first, s.mass.data(), count * sizeof(geometry::MassStats), s.stream, what);
      download(mass->magnitudes.data() + first, s.magnitudes.data(), count * sizeof(geometry::HeadMagnitudes), s.stream,
               what);
    }
    const char* what = "copy the selection metrics to the host";
    download(host_points.data() + at, b.points, done * sizeof(geometry::SelectionPoint), s.stream, what);
    download(host_curves.data() + at * radii, b.curves, done * radii * sizeof(geometry::BallScores), s.stream, what);
    // The next chunk reuses every buffer: wait for this one's copies.
    check(cudaStreamSynchronize(s.stream), "selection metrics");
  }
  for (std::size_t r = 0; r < in.keys.size(); ++r) {
    for (std::size_t g = 0; g < in.n_values.size() && in.n_values[g] < static_cast<std::size_t>(in.keys[r]); ++g) {
      const std::size_t at = r * in.n_values.size() + g;
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
