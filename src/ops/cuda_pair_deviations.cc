#include "ops/cuda_pair_deviations.h"

#include <algorithm>
#include <vector>

#include "ops/cuda_deviation_kernels.h"
#include "ops/cuda_memory.h"

namespace attngeom {
namespace {

using cuda::check;

// The Gram matrices of one batch of heads stay within this (always at least one head's).
constexpr std::uint64_t kGramBudget = std::uint64_t{1} << 30;

int heads_per_batch(int heads, int keys) {
  const std::uint64_t gram = static_cast<std::uint64_t>(keys) * static_cast<std::uint64_t>(keys) * sizeof(double);
  return static_cast<int>(std::clamp<std::uint64_t>(kGramBudget / gram, 1, static_cast<std::uint64_t>(heads)));
}

}  // namespace

struct CudaPairDeviations::State {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cuda::Scratch<float> values;        // [batch, size, dim]
  cuda::Scratch<double> wide;         // [batch, size, dim]
  cuda::Scratch<double> gram;         // [batch, size, size]
  cuda::Scratch<double> norms;        // [batch, size]
  cuda::Scratch<double> partial;      // [batch, rows, strips, 3]
  cuda::Scratch<double> totals;       // [batch, rows, 3]
  cuda::Scratch<double> beta, rho_0;  // [batch, rows]
  cuda::Scratch<int> keys;            // [rows]

  void use_device() const { check(cudaSetDevice(device), "cudaSetDevice"); }
};

CudaPairDeviations::CudaPairDeviations(int device) : state_(std::make_unique<State>()) {
  state_->device = device;
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

std::uint64_t CudaPairDeviations::bytes(int heads, int keys, int dim, int rows) {
  const auto batch = static_cast<std::uint64_t>(heads_per_batch(heads, keys));
  const auto m = static_cast<std::uint64_t>(keys);
  const auto r = static_cast<std::uint64_t>(rows);
  const std::uint64_t per_head =
      m * m * sizeof(double) + m * static_cast<std::uint64_t>(dim) * (sizeof(float) + sizeof(double)) +
      m * sizeof(double) + static_cast<std::uint64_t>(cuda::deviation_partial_count(keys, rows)) * sizeof(double) +
      r * 5 * sizeof(double);
  return batch * per_head + r * sizeof(int);
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
  const int batch = heads_per_batch(heads, size);
  const auto area = static_cast<std::size_t>(size) * static_cast<std::size_t>(dim);     // one head's values
  const auto square = static_cast<std::size_t>(size) * static_cast<std::size_t>(size);  // one head's Gram
  const auto partials = static_cast<std::size_t>(cuda::deviation_partial_count(size, rows));
  s.values.at_least(batch * area);
  s.wide.at_least(batch * area);
  s.gram.at_least(batch * square);
  s.norms.at_least(static_cast<std::size_t>(batch) * static_cast<std::size_t>(size));
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
    // Column-major, each head's values are V^T [dim, size]; their Gram V V^T [size, size] is
    // symmetric, so one triangle, the one the pass reads.
    const double one = 1.0;
    const double zero = 0.0;
    const cublasFillMode_t triangle =
        pass == cuda::DeviationPass::kLagWalk ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
    for (int h = 0; h < n; ++h) {
      check(cublas_library().dsyrk(s.blas, triangle, CUBLAS_OP_T, size, dim, &one, s.wide.data() + h * area, dim, &zero,
                                   s.gram.data() + h * square, size),
            "cublasDsyrk (value Gram)");
    }
    const std::size_t first = static_cast<std::size_t>(h0) * keys.size();
    const std::size_t count = static_cast<std::size_t>(n) * keys.size();
    const std::span<const double> batch_beta(beta.data() + first, count);
    const std::span<const double> batch_rho(rho_0.data() + first, count);
    cuda::DeviationRows rows_of{s.gram.data(),
                                n,
                                size,
                                rows,
                                device_keys,
                                s.beta.upload(batch_beta, s.stream),
                                s.rho_0.upload(batch_rho, s.stream),
                                s.norms.data(),
                                s.partial.data()};
    check(cuda::cosine_deviation_totals(rows_of, pass, s.totals.data(), s.stream), "cosine deviations");
    check(cudaMemcpyAsync(host_totals.data() + first * 3, s.totals.data(), count * 3 * sizeof(double),
                          cudaMemcpyDeviceToHost, s.stream),
          "copy the deviations to the host");
  }
  check(cudaStreamSynchronize(s.stream), "cosine deviations");
  for (std::size_t i = 0; i < totals.size(); ++i) {
    totals[i] = {host_totals[i * 3], host_totals[i * 3 + 1], static_cast<std::uint64_t>(host_totals[i * 3 + 2])};
  }
}

}  // namespace attngeom
