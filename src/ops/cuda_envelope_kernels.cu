// The envelope kernel (ops/cuda_envelope_kernels.h). Compiled without contracted multiply-adds
// (--fmad=false), like the CPU geometry: the model's recursions use fma explicitly on both sides.
#include "ops/cuda_block_reduce.cuh"
#include "ops/cuda_envelope_kernels.h"

namespace attngeom::cuda {
namespace {

constexpr int kThreads = 64;  // few: thread 0's chains set a block's time, so more blocks run at once
constexpr int kArrays = 10;   // the model state's eight [M] arrays, and lo and hi

__host__ __device__ std::size_t scratch_bytes_of(int size) { return kArrays * static_cast<std::size_t>(size) * 8; }

// R2's tail with the row's table of terms: support s reads entry s - first.
struct TableTail {
  const geometry::SupportTerm* terms;  // [3]
  std::size_t first;                   // the support of terms[0]
  std::size_t dim;
  double sigma2;
  __device__ double operator()(double margin, double spread, std::size_t support) const {
    return geometry::support_tail(terms[support - first], margin, spread, dim, sigma2);
  }
};

// The extremes of one kind of interval over the block's keys (lo and hi into `lo` and `hi`), then
// the keys inside: envelope_from_intervals's counts, exact in any order.
template <class Interval>
__device__ geometry::IntervalCounts interval_counts(int n, int keys, Interval interval, double* lo, double* hi,
                                                    double* shared, int* shared_counts) {
  geometry::IntervalCounts c;
  double rmax_lo = 0.0;
  double rmax_hi = 0.0;
  double rmin_lo = HUGE_VAL;
  double rmin_hi = HUGE_VAL;
  ATTNGEOM_FOR_EACH_IN_BLOCK(p, 0, keys) {
    interval(p, lo[p], hi[p]);
    if (p < n) {
      rmax_lo = rmax_lo < lo[p] ? lo[p] : rmax_lo;
      rmax_hi = rmax_hi < hi[p] ? hi[p] : rmax_hi;
    } else {
      rmin_lo = lo[p] < rmin_lo ? lo[p] : rmin_lo;
      rmin_hi = hi[p] < rmin_hi ? hi[p] : rmin_hi;
    }
  }
  c.rmax_lo = block_reduce(rmax_lo, MaxOf{}, shared);
  c.rmax_hi = block_reduce(rmax_hi, MaxOf{}, shared);
  c.rmin_lo = block_reduce(rmin_lo, MinOf{}, shared);
  c.rmin_hi = block_reduce(rmin_hi, MinOf{}, shared);
  int fp_sure = 0;
  int fp_possible = 0;
  int tp_sure = 0;
  int tp_possible = 0;
  ATTNGEOM_FOR_EACH_IN_BLOCK(p, 0, keys) {  // each thread its own keys of the pass above
    if (p < n) {
      tp_sure += hi[p] <= c.rmin_lo;
      tp_possible += lo[p] <= c.rmin_hi;
    } else {
      fp_sure += hi[p] <= c.rmax_lo;
      fp_possible += lo[p] <= c.rmax_hi;
    }
  }
  c.fp_sure = static_cast<std::size_t>(block_reduce(fp_sure, Sum{}, shared_counts));
  c.fp_possible = static_cast<std::size_t>(block_reduce(fp_possible, Sum{}, shared_counts));
  c.tp_sure = static_cast<std::size_t>(block_reduce(tp_sure, Sum{}, shared_counts));
  c.tp_possible = static_cast<std::size_t>(block_reduce(tp_possible, Sum{}, shared_counts));
  return c;
}

// The first position in [begin, end) of the value that `better` prefers to every other (the
// largest or the smallest), as a loop in position order keeps it.
template <class Better>
__device__ int first_extreme(const double* values, int begin, int end, Better better, double* shared,
                             int* shared_counts) {
  double best = values[begin];
  int at = begin;
  ATTNGEOM_FOR_EACH_IN_BLOCK(p, begin, end) {
    if (better(values[p], best)) best = values[p], at = p;
  }
  const double extreme = block_reduce(
      best, [better](double x, double y) { return better(y, x) ? y : x; }, shared);
  return block_reduce(best == extreme ? at : end, MinOf{}, shared_counts);
}

// Block (row r, N = n_values[g]) at blockIdx.x = r * grid + g: geometry's advance_model,
// deterministic_point, probabilistic_point and separation_bound, the keys shared among the
// threads where each key's terms stand alone (the model at each key, the intervals, extrema
// and counts, the tails), thread 0 alone where the CPU's order is a chain: the selected sums,
// the two recursions, ||s_N||^2 and the sums of the tails, each in the CPU's order.
__global__ void envelope_kernel(SelectionRows b, EnvelopeRows e) {
  const std::int64_t rg = blockIdx.x;
  const auto [r, n, keys] = evaluation_of(b, rg);
  if (n >= keys) return;
  // Ten [size] arrays of eight bytes: the model state's eight, then nu and nu^2 by position,
  // which become the intervals' lo and hi once the model is built.
  double* memory = reinterpret_cast<double*>(static_cast<char*>(e.scratch) + rg * scratch_bytes_of(b.size));
  const std::size_t m = static_cast<std::size_t>(b.size);
  geometry::ModelState s;
  s.weighted_by_key = memory;
  s.forward = memory + m;
  s.backward = memory + 2 * m;
  s.projection = memory + 3 * m;
  s.mu = memory + 4 * m;
  s.spread = memory + 5 * m;
  s.rounding = memory + 6 * m;
  s.support = reinterpret_cast<std::size_t*>(memory + 7 * m);
  double* norms = memory + 8 * m;     // nu by position, then lo
  double* sq_norms = memory + 9 * m;  // nu^2 by position, then hi
  const std::int64_t at = static_cast<std::int64_t>(r) * b.size;
  ATTNGEOM_FOR_EACH_IN_BLOCK(p, 0, keys) {
    s.weighted_by_key[p] = 0.0;
    norms[p] = sqrt(b.sq_norms[at + p]);  // value_norms: sqrt of the lanes' ||v||^2
    sq_norms[p] = norms[p] * norms[p];
  }
  geometry::ModelRow<int> row;
  row.keys = static_cast<std::size_t>(keys);
  row.alpha = b.alpha + at;
  row.norms = norms;
  row.sq_norms = sq_norms;
  row.order = b.order + at;
  row.decay = e.decay[r];
  row.rho_0 = e.rho_0[r];
  const double* a = s.weighted_by_key;

  // The model: I_N's sums and the recursions on thread 0, the projections shared, ||s_N||^2 on
  // thread 0, then the model at each key shared.
  __shared__ double shared[kMaxWarps];
  __shared__ int shared_counts[kMaxWarps];
  __shared__ double sums[4];  // weighted_sum, weighted_sq_sum, content sum, ||s_N||^2
  __shared__ int nonzero;
  __syncthreads();
  if (threadIdx.x == 0) {
    geometry::add_selected(row, static_cast<std::size_t>(n), s);
    sums[0] = s.weighted_sum;
    sums[1] = s.weighted_sq_sum;
    nonzero = static_cast<int>(s.nonzero);
    sums[2] = geometry::content_recursions(a, row.keys, row.decay, s.forward, s.backward);
  }
  __syncthreads();
  s.n = static_cast<std::size_t>(n);
  s.weighted_sum = sums[0];
  s.weighted_sq_sum = sums[1];
  s.nonzero = static_cast<std::size_t>(nonzero);
  ATTNGEOM_FOR_EACH_IN_BLOCK(k, 1, keys) {
    s.projection[k] = geometry::content_projection(s.forward, s.backward, a, row.rho_0, static_cast<std::size_t>(k));
  }
  if (threadIdx.x == 0) s.projection[0] = geometry::sink_projection(a, row.rho_0, sums[2]);
  // ||s_N||^2 = sum_k a_k projection_k in the order of the keys, over I_N's alone: the other
  // terms are zeros, which leave a sum that starts at +0 as it is.
  __shared__ double selected_keys[kMaxSelected];
  ATTNGEOM_FOR_EACH_IN_BLOCK(i, 0, n) selected_keys[i] = static_cast<double>(row.order[i]);
  block_sort_ascending(selected_keys, n);
  if (threadIdx.x == 0) {
    double norm2 = 0.0;
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<int>(selected_keys[i]);
      norm2 += a[k] * s.projection[k];
    }
    sums[3] = norm2;
  }
  __syncthreads();
  ATTNGEOM_FOR_EACH_IN_BLOCK(p, 0, keys) {
    const geometry::KeyModel k =
        geometry::key_model(row.alpha[p], norms[p], sq_norms[p], norms[p] * s.projection[row.order[p]], sums[3],
                            s.weighted_sum, s.weighted_sq_sum, s.nonzero, p < n);
    s.mu[p] = k.mu;
    s.spread[p] = k.spread;
    s.rounding[p] = k.rounding;
    s.support[p] = k.support;
  }
  __syncthreads();  // nu and nu^2 become lo and hi

  // R1, then R2, each an interval per key, its extremes and counts.
  double* lo = norms;
  double* hi = sq_norms;
  const double eta = e.eta[r];
  const geometry::IntervalCounts r1 = interval_counts(
      n, keys, [&](int p, double& l, double& h) { geometry::deterministic_interval(s, p, eta, l, h); }, lo, hi, shared,
      shared_counts);
  if (threadIdx.x == 0) e.r1[rg] = geometry::envelope_from_counts(static_cast<std::size_t>(n), row.keys, r1);
  double least_support = HUGE_VAL;
  double most_support = 0.0;
  ATTNGEOM_FOR_EACH_IN_BLOCK(p, 0, keys) {
    least_support = fmin(least_support, static_cast<double>(s.support[p]));
    most_support = fmax(most_support, static_cast<double>(s.support[p]));
  }
  const auto least = static_cast<std::size_t>(block_reduce(least_support, MinOf{}, shared));
  const auto most = static_cast<std::size_t>(block_reduce(most_support, MaxOf{}, shared));
  const geometry::SupportTerm* terms = e.terms + rg * 3;
  const std::size_t first = s.nonzero - 1;  // the support of terms[0]
  double roots[3] = {0.0, 0.0, 0.0};
  for (std::size_t k = 0; k <= most - least && k < 3; ++k) {
    if (least + k >= 2) roots[k] = terms[least + k - first].margin_root;
  }
  const geometry::IntervalCounts r2 = interval_counts(
      n, keys, [&](int p, double& l, double& h) { geometry::probabilistic_interval(s, p, least, roots, l, h); }, lo, hi,
      shared, shared_counts);
  if (threadIdx.x == 0) e.r2[rg] = geometry::envelope_from_counts(static_cast<std::size_t>(n), row.keys, r2);

  // The separation bound: its two keys shared, each unselected key's tail shared into lo, the
  // sums on thread 0 in position order.
  const int inside = first_extreme(
      s.mu, 0, n, [](double x, double y) { return x > y; }, shared, shared_counts);
  const int outside = first_extreme(
      s.mu, n, keys, [](double x, double y) { return x < y; }, shared, shared_counts);
  const double t = geometry::envelope_step::balanced_threshold(s, static_cast<std::size_t>(inside),
                                                               static_cast<std::size_t>(outside));
  TableTail tail{terms, first, static_cast<std::size_t>(b.dim), e.sigma2[r]};
  ATTNGEOM_FOR_EACH_IN_BLOCK(p, n, keys) lo[p] = geometry::false_positive_term(s, static_cast<std::size_t>(p), t, tail);
  __syncthreads();
  if (threadIdx.x != 0) return;
  double missed = 0.0;
  for (int p = 0; p < n; ++p) missed += geometry::missed_term(s, static_cast<std::size_t>(p), t, tail);
  double false_positives = 0.0;
  for (int p = n; p < keys; ++p) false_positives += lo[p];
  e.separation[rg] = geometry::separation_from(s, static_cast<std::size_t>(inside), static_cast<std::size_t>(outside),
                                               missed, false_positives);
}

}  // namespace

std::size_t envelope_scratch_bytes(int size) {
  static_assert(sizeof(std::size_t) == 8 && sizeof(double) == 8);
  return scratch_bytes_of(size);
}

cudaError_t evaluate_envelopes(const SelectionRows& b, const EnvelopeRows& e, cudaStream_t stream) {
  envelope_kernel<<<b.rows * b.grid, kThreads, 0, stream>>>(b, e);
  return cudaGetLastError();
}

}  // namespace attngeom::cuda
