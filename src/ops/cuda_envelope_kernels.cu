// The envelope kernel (ops/cuda_envelope_kernels.h). Compiled without contracted multiply-adds
// (--fmad=false), like the CPU geometry: the model's recursions use fma explicitly on both sides.
#include "ops/cuda_envelope_kernels.h"

namespace attngeom::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxBlocks = 65535;
constexpr int kArrays = 10;  // the model state's eight [M] arrays, and lo and hi

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

__global__ void envelope_kernel(SelectionRows b, EnvelopeRows e) {
  for (std::int64_t rg = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       rg < static_cast<std::int64_t>(b.rows) * b.grid; rg += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int g = static_cast<int>(rg % b.grid);
    const int r = static_cast<int>(rg / b.grid);
    const auto n = static_cast<std::size_t>(b.n_values[g]);
    const auto keys = static_cast<std::size_t>(b.keys[r]);
    if (n >= keys) continue;
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
    for (std::size_t p = 0; p < keys; ++p) {
      s.weighted_by_key[p] = 0.0;
      norms[p] = sqrt(b.sq_norms[at + p]);  // value_norms: sqrt of the lanes' ||v||^2
      sq_norms[p] = norms[p] * norms[p];
    }
    geometry::ModelRow<int> row;
    row.keys = keys;
    row.alpha = b.alpha + at;
    row.norms = norms;
    row.sq_norms = sq_norms;
    row.order = b.order + at;
    row.decay = e.decay[r];
    row.rho_0 = e.rho_0[r];
    // The CPU's sweep reaches this N through the smaller ones: the same sums in the same order.
    geometry::advance_model(row, n, s);
    double* lo = norms;
    double* hi = sq_norms;
    e.r1[rg] = geometry::deterministic_point(s, keys, e.eta[r], lo, hi);
    std::size_t least = 0;
    std::size_t most = 0;
    geometry::support_range(s.support, keys, least, most);
    const geometry::SupportTerm* terms = e.terms + rg * 3;
    const std::size_t first = s.nonzero - 1;  // the support of terms[0]
    double roots[3] = {0.0, 0.0, 0.0};
    for (std::size_t k = 0; k <= most - least && k < 3; ++k) {
      if (least + k >= 2) roots[k] = terms[least + k - first].margin_root;
    }
    e.r2[rg] = geometry::probabilistic_point(s, keys, least, roots, lo, hi);
    TableTail tail{terms, first, static_cast<std::size_t>(b.dim), e.sigma2[r]};
    e.separation[rg] = geometry::separation_bound(s, keys, tail);
  }
}

}  // namespace

std::size_t envelope_scratch_bytes(int size) {
  static_assert(sizeof(std::size_t) == 8 && sizeof(double) == 8);
  return scratch_bytes_of(size);
}

cudaError_t evaluate_envelopes(const SelectionRows& b, const EnvelopeRows& e, cudaStream_t stream) {
  const std::int64_t count = static_cast<std::int64_t>(b.rows) * b.grid;
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  envelope_kernel<<<static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks)), kThreads, 0,
                    stream>>>(b, e);
  return cudaGetLastError();
}

}  // namespace attngeom::cuda
