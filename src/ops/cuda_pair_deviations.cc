#include "ops/cuda_pair_deviations.h"

#include <algorithm>
#include <vector>

#include "geometry/lag_walk_step.h"
#include "ops/cuda_deviation_kernels.h"
#include "ops/cuda_memory.h"

namespace attngeom {
namespace {

using cuda::check;

// How a call's kv heads take their Gram matrices: `heads` at a time, each in strips of `width`
// columns (a multiple of the kernels' alignment, or all of them). All heads at once where
// strips of the aligned width fit the budget, since a strip's kernels then fill the GPU.
struct StripPlan {
  int heads = 1;
  int width = 1;
};

StripPlan plan_strips(int heads, int size, std::uint64_t budget) {
  const std::uint64_t column = static_cast<std::uint64_t>(size) * sizeof(double);  // one kv head's
  const std::uint64_t align = cuda::kDeviationStripAlign;
  const std::uint64_t width = budget / (column * static_cast<std::uint64_t>(heads));
  if (width >= static_cast<std::uint64_t>(size)) return {heads, size};
  if (width >= align) return {heads, static_cast<int>(width / align * align)};
  const auto fitting = static_cast<int>(std::clamp<std::uint64_t>(budget / (column * align), 1, heads));
  return {fitting, std::min(size, cuda::kDeviationStripAlign)};
}

// Strip [first, end) of each Gram matrix of a batch into `gram` (strip.gram, writable), from
// the values `wide` [matrices, size, dim]: one product for all of them.
void add_gram_strip(cublasHandle_t blas, const double* wide, double* gram, const cuda::DeviationRows& strip, int dim) {
  const double one = 1.0;
  const double zero = 0.0;
  const long long area = static_cast<long long>(strip.size) * dim;
  // Column-major, a head's values are V^T [dim, size]; the strip holds G(i, l) = <v_i, v_l> for
  // i < end and l in [first, end) at (l - first) * end + i: V^T's first `end` columns times the
  // strip's (the lower triangle of the strip's own square comes along unread).
  check(cublas_library().dgemm_strided_batched(blas, CUBLAS_OP_T, CUBLAS_OP_N, strip.end, strip.end - strip.first, dim,
                                               &one, wide, dim, area, wide + static_cast<long long>(strip.first) * dim,
                                               dim, area, &zero, gram, strip.end, strip.gram_stride, strip.matrices),
        "cublasDgemmStridedBatched (value Gram)");
}

}  // namespace

struct CudaPairDeviations::State {
  int device = 0;
  std::uint64_t strip_bytes = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cuda::Scratch<float> values;             // [batch, size, dim]
  cuda::Scratch<double> wide;              // [batch, size, dim]
  cuda::Scratch<double> gram;              // [batch, width, size]: one strip of each head
  cuda::Scratch<double> norms;             // [batch, size]
  cuda::Scratch<geometry::LagWalk> walks;  // [batch, size]
  cuda::Scratch<double> partial;           // [batch, rows, parts, 3]
  cuda::Scratch<double> totals;            // [batch, rows, 3]
  cuda::Scratch<double> beta, rho_0;       // [batch, rows]
  cuda::Scratch<int> keys;                 // [rows]

  void use_device() const { check(cudaSetDevice(device), "cudaSetDevice"); }
};

CudaPairDeviations::CudaPairDeviations(int device, std::uint64_t strip_bytes) : state_(std::make_unique<State>()) {
  state_->device = device;
  state_->strip_bytes = strip_bytes;
  state_->use_device();
  check(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cublas_library().create(&state_->blas), "cublasCreate");
  check(cublas_library().set_stream(state_->blas, state_->stream), "cublasSetStream");
}

CudaPairDeviations::~CudaPairDeviations() {
  cudaSetDevice(state_->device);  // its stream and memory (freed after this) are that GPU's, whichever thread ends it
  cudaStreamSynchronize(state_->stream);
  cublas_library().destroy(state_->blas);
  cudaStreamDestroy(state_->stream);
}

bool CudaPairDeviations::walks_lags(std::span<const int> keys) {
  if (keys.size() < 2 || !std::is_sorted(keys.begin(), keys.end())) return false;
  const auto size = static_cast<double>(keys.back());
  const auto rows = static_cast<double>(keys.size());
  double own_pairs = 0.0;  // twice the pairs the rows' own passes visit
  for (const int m : keys) own_pairs += static_cast<double>(m) * m;
  return own_pairs > size * size + 2.0 * rows * size;  // the walk's pairs, and each row's terms at each lag
}

std::uint64_t CudaPairDeviations::bytes(int heads, int keys, int dim, int rows, std::uint64_t strip_bytes) {
  const StripPlan plan = plan_strips(heads, keys, strip_bytes);
  const auto m = static_cast<std::uint64_t>(keys);
  const auto r = static_cast<std::uint64_t>(rows);
  const std::uint64_t per_head =
      static_cast<std::uint64_t>(plan.width) * m * sizeof(double) +
      m * static_cast<std::uint64_t>(dim) * (sizeof(float) + sizeof(double)) +
      m * (sizeof(double) + sizeof(geometry::LagWalk)) +
      static_cast<std::uint64_t>(cuda::deviation_partial_count(keys, rows)) * sizeof(double) + r * 5 * sizeof(double);
  return static_cast<std::uint64_t>(plan.heads) * per_head + r * sizeof(int);
}

void CudaPairDeviations::compute(const float* values, int heads, int seq, int dim, std::span<const int> keys,
                                 std::span<const PairDeviationModel> models, std::span<PairDeviationTotals> totals) {
  const int rows = static_cast<int>(keys.size());
  ATTNGEOM_CHECK(heads > 0 && dim > 0 && rows > 0 && models.size() == static_cast<std::size_t>(heads) * keys.size() &&
                 totals.size() == models.size());
  const int size = *std::max_element(keys.begin(), keys.end());
  ATTNGEOM_CHECK(size <= seq && *std::min_element(keys.begin(), keys.end()) >= 1);
  State& s = *state_;
  s.use_device();
  const cuda::DeviationPass pass = walks_lags(keys) ? cuda::DeviationPass::kLagWalk : cuda::DeviationPass::kEachRow;
  const StripPlan plan = plan_strips(heads, size, s.strip_bytes);
  const int batch = plan.heads;
  const auto area = static_cast<std::size_t>(size) * static_cast<std::size_t>(dim);          // one head's values
  const auto strip = static_cast<std::size_t>(plan.width) * static_cast<std::size_t>(size);  // one head's strip
  const auto partials = static_cast<std::size_t>(cuda::deviation_partial_count(size, rows));
  s.values.at_least(batch * area);
  s.wide.at_least(batch * area);
  s.gram.at_least(batch * strip);
  s.norms.at_least(static_cast<std::size_t>(batch) * static_cast<std::size_t>(size));
  s.walks.at_least(static_cast<std::size_t>(batch) * static_cast<std::size_t>(size));
  s.partial.at_least(batch * partials);
  s.totals.at_least(static_cast<std::size_t>(batch) * keys.size() * 3);
  const int* device_keys = s.keys.upload(keys, s.stream);
  std::vector<double> beta(models.size()), rho_0(models.size());
  for (std::size_t i = 0; i < models.size(); ++i) beta[i] = models[i].beta, rho_0[i] = models[i].rho_0;
  std::vector<double> host_totals(models.size() * 3);

  for (int h0 = 0; h0 < heads; h0 += batch) {
    const int n = std::min(batch, heads - h0);
    // Keys 0..size-1 of each head, whose rows lie seq * dim apart.
    check(cudaMemcpy2DAsync(s.values.data(), area * sizeof(float),
                            values + static_cast<std::size_t>(h0) * static_cast<std::size_t>(seq) * dim,
                            static_cast<std::size_t>(seq) * dim * sizeof(float), area * sizeof(float),
                            static_cast<std::size_t>(n), cudaMemcpyHostToDevice, s.stream),
          "copy the values to the GPU");
    check(cuda::widen_to_double(s.values.data(), s.wide.data(), static_cast<std::int64_t>(n * area), s.stream),
          "widen the values");
    check(cuda::value_norms(s.wide.data(), static_cast<std::int64_t>(n) * size, dim, s.norms.data(), s.stream),
          "the values' norms");
    const std::size_t first_model = static_cast<std::size_t>(h0) * keys.size();
    const std::size_t count = static_cast<std::size_t>(n) * keys.size();
    cuda::DeviationRows rows_of{};
    rows_of.gram = s.gram.data();
    rows_of.gram_stride = static_cast<std::int64_t>(strip);
    rows_of.matrices = n;
    rows_of.size = size;
    rows_of.rows = rows;
    rows_of.keys = device_keys;
    rows_of.beta = s.beta.upload(std::span<const double>(beta.data() + first_model, count), s.stream);
    rows_of.rho_0 = s.rho_0.upload(std::span<const double>(rho_0.data() + first_model, count), s.stream);
    rows_of.norms = s.norms.data();
    rows_of.partial = s.partial.data();
    rows_of.walks = s.walks.data();
    for (int first = 0; first < size; first += plan.width) {
      rows_of.first = first;
      rows_of.end = std::min(size, first + plan.width);
      add_gram_strip(s.blas, s.wide.data(), s.gram.data(), rows_of, dim);
      check(cuda::add_strip_deviations(rows_of, pass, s.stream), "cosine deviations");
    }
    check(cuda::deviation_totals(rows_of, pass, s.totals.data(), s.stream), "cosine deviations");
    check(cudaMemcpyAsync(host_totals.data() + first_model * 3, s.totals.data(), count * 3 * sizeof(double),
                          cudaMemcpyDeviceToHost, s.stream),
          "copy the deviations to the host");
  }
  check(cudaStreamSynchronize(s.stream), "cosine deviations");
  for (std::size_t i = 0; i < totals.size(); ++i) {
    totals[i] = {host_totals[i * 3], host_totals[i * 3 + 1], static_cast<std::uint64_t>(host_totals[i * 3 + 2])};
  }
}

}  // namespace attngeom
