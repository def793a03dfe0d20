// The selection-metric kernels (ops/cuda_selection_kernels.h). Compiled without contracted
// multiply-adds (--fmad=false), like the CPU geometry (-ffp-contract=off): the explicit fma of
// the projections is the only fused operation on either side.
#include <cub/device/device_segmented_radix_sort.cuh>

#include "geometry/mass_step.h"
#include "geometry/selection_step.h"
#include "ops/cuda_selection_kernels.h"

namespace attngeom::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 65535;

int blocks_for(std::int64_t count) {
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

// Every index in [0, count), spread over the grid.
#define FOR_EACH_INDEX(i, count)                                                                       \
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (count); \
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)

// Five [size] arrays of eight bytes per evaluation: offset, recomputed, recomputed_d2,
// selected_sorted, tally.
__host__ __device__ std::size_t scratch_bytes_of(int size) { return 5 * static_cast<std::size_t>(size) * 8; }

__global__ void squared_norms_kernel(const float* values, std::int64_t count, int dim, double* out) {
  FOR_EACH_INDEX(i, count) out[i] = geometry::squared_norm_in_lanes(values + i * dim, static_cast<std::size_t>(dim));
}

__global__ void prepare_sort_kernel(SelectionRows b, const float* alpha, int* begin, int* end) {
  FOR_EACH_INDEX(i, static_cast<std::int64_t>(b.rows) * b.size) {
    const int r = static_cast<int>(i / b.size);
    const int k = static_cast<int>(i % b.size);
    if (k == 0) {
      begin[r] = r * b.size;
      end[r] = r * b.size + b.keys[r];
    }
    if (k >= b.keys[r]) continue;
    b.sort_keys[i] = alpha[i] + 0.0f;  // -0 becomes +0, which the CPU's comparison holds equal
    b.order[i] = k;
  }
}

__global__ void gather_kernel(SelectionRows b, const float* alpha_by_key, const float* sorted_keys,
                              const int* sorted_order) {
  FOR_EACH_INDEX(i, static_cast<std::int64_t>(b.rows) * b.size) {
    const int r = static_cast<int>(i / b.size);
    const int p = static_cast<int>(i % b.size);
    const int keys = b.keys[r];
    if (p >= keys) continue;
    const int k = sorted_order[i];
    b.order[i] = k;
    b.alpha[i] = static_cast<double>(alpha_by_key[static_cast<std::int64_t>(r) * b.size + k]);  // -0 kept, as the CPU's
    b.sq_norms[i] = b.key_sq_norms[static_cast<std::int64_t>(b.value_head[r]) * b.value_seq + k];
    if (k == 0) b.ends[2 * r] = p;
    if (k == keys - 1) b.ends[2 * r + 1] = p;
    // Descending weights >= 0: the nonzero ones come first, and the last of them says how many.
    if (sorted_keys[i] != 0.0f && (p + 1 == keys || sorted_keys[i + 1] == 0.0f)) b.nonzero[r] = p + 1;
    if (p == 0 && sorted_keys[i] == 0.0f) b.nonzero[r] = 0;
  }
}

__global__ void minima_kernel(SelectionRows b) {
  FOR_EACH_INDEX(r, b.rows) {
    const std::int64_t at = r * b.size;
    geometry::weighted_norm_minima(b.alpha + at, b.sq_norms + at, static_cast<std::size_t>(b.keys[r]),
                                   b.weighted_norm_min + at);
  }
}

__device__ const float* values_of(const SelectionRows& b, int r) {
  return b.values + static_cast<std::int64_t>(b.value_head[r]) * b.value_seq * b.dim;
}

// Thread (r, t): s_N[t] at each N of the row.
__global__ void sums_kernel(SelectionRows b) {
  FOR_EACH_INDEX(i, static_cast<std::int64_t>(b.rows) * b.dim) {
    const int r = static_cast<int>(i / b.dim);
    const std::int64_t at = static_cast<std::int64_t>(r) * b.size;
    geometry::grow_sums_at(b.alpha + at, b.order + at, values_of(b, r), static_cast<std::size_t>(b.dim),
                           static_cast<std::size_t>(i % b.dim), b.n_values, static_cast<std::size_t>(b.grid),
                           static_cast<std::size_t>(b.keys[r]), b.sums + static_cast<std::int64_t>(r) * b.grid * b.dim);
  }
}

// Thread (r, g, p): <v_p, s_N>.
__global__ void dots_kernel(SelectionRows b) {
  FOR_EACH_INDEX(i, static_cast<std::int64_t>(b.rows) * b.grid * b.size) {
    const int p = static_cast<int>(i % b.size);
    const std::int64_t rg = i / b.size;
    const int g = static_cast<int>(rg % b.grid);
    const int r = static_cast<int>(rg / b.grid);
    if (b.n_values[g] >= b.keys[r] || p >= b.keys[r]) continue;
    const float* v =
        values_of(b, r) + static_cast<std::int64_t>(b.order[static_cast<std::int64_t>(r) * b.size + p]) * b.dim;
    b.dots[i] = geometry::projection_of(v, b.sums + rg * b.dim, static_cast<std::size_t>(b.dim));
  }
}

__global__ void evaluate_kernel(SelectionRows b) {
  FOR_EACH_INDEX(rg, static_cast<std::int64_t>(b.rows) * b.grid) {
    const int g = static_cast<int>(rg % b.grid);
    const int r = static_cast<int>(rg / b.grid);
    const int n = b.n_values[g];
    if (n >= b.keys[r]) continue;
    const std::int64_t at = static_cast<std::int64_t>(r) * b.size;
    geometry::PositionedView<int> view;
    view.keys = static_cast<std::size_t>(b.keys[r]);
    view.dim = static_cast<std::size_t>(b.dim);
    view.alpha = b.alpha + at;
    view.sq_norms = b.sq_norms + at;
    view.weighted_norm_min = b.weighted_norm_min + at;
    view.order = b.order + at;
    view.values = values_of(b, r);
    view.sink_position = static_cast<std::size_t>(b.ends[2 * r]);
    view.last_position = static_cast<std::size_t>(b.ends[2 * r + 1]);
    char* memory = static_cast<char*>(b.scratch) + rg * static_cast<std::int64_t>(scratch_bytes_of(b.size));
    const std::size_t column = static_cast<std::size_t>(b.size) * 8;
    geometry::SelectionScratch scratch;
    scratch.offset = reinterpret_cast<double*>(memory);
    scratch.recomputed = reinterpret_cast<std::size_t*>(memory + column);
    scratch.recomputed_d2 = reinterpret_cast<double*>(memory + 2 * column);
    scratch.selected_sorted = reinterpret_cast<double*>(memory + 3 * column);
    scratch.tally = reinterpret_cast<std::size_t*>(memory + 4 * column);
    geometry::HeapSortFrom sort_from;
    geometry::evaluate_selection(view, static_cast<std::size_t>(n), b.dots + rg * b.size, b.sums + rg * b.dim,
                                 b.normalised_radii, static_cast<std::size_t>(b.radius_count), scratch, sort_from,
                                 b.points[rg], b.curves + rg * b.radius_count);
  }
}

// Thread (r, t): coordinate t of the rest, sum_{0<i<L} alpha_i v_i, in ascending i.
__global__ void rest_kernel(SelectionRows b, const float* alpha_by_key, double* rest) {
  FOR_EACH_INDEX(i, static_cast<std::int64_t>(b.rows) * b.dim) {
    const int r = static_cast<int>(i / b.dim);
    rest[i] = geometry::rest_coordinate(alpha_by_key + static_cast<std::int64_t>(r) * b.size, values_of(b, r),
                                        static_cast<std::size_t>(b.keys[r]), static_cast<std::size_t>(b.dim),
                                        static_cast<std::size_t>(i % b.dim));
  }
}

__global__ void mass_kernel(SelectionRows b, const float* alpha_by_key, const float* sorted_keys,
                            geometry::MassOptions options, const double* rest, geometry::MassStats* mass,
                            geometry::HeadMagnitudes* magnitudes) {
  FOR_EACH_INDEX(r, b.rows) {
    const std::int64_t at = r * b.size;
    const auto keys = static_cast<std::size_t>(b.keys[r]);
    mass[r] = geometry::mass_step(alpha_by_key + at, keys, sorted_keys + at, options);
    magnitudes[r] = geometry::magnitudes_step(alpha_by_key + at, values_of(b, static_cast<int>(r)), keys,
                                              static_cast<std::size_t>(b.dim), rest + r * b.dim);
  }
}

}  // namespace

std::size_t selection_scratch_bytes(int size) {
  static_assert(sizeof(std::size_t) == 8 && sizeof(double) == 8);
  return scratch_bytes_of(size);
}

cudaError_t squared_norms(const float* values, int heads, int seq, int dim, double* key_sq_norms, cudaStream_t stream) {
  const std::int64_t count = static_cast<std::int64_t>(heads) * seq;
  squared_norms_kernel<<<blocks_for(count), kThreads, 0, stream>>>(values, count, dim, key_sq_norms);
  return cudaGetLastError();
}

cudaError_t prepare_sort(const SelectionRows& b, const float* alpha, int* begin, int* end, cudaStream_t stream) {
  prepare_sort_kernel<<<blocks_for(static_cast<std::int64_t>(b.rows) * b.size), kThreads, 0, stream>>>(b, alpha, begin,
                                                                                                       end);
  return cudaGetLastError();
}

cudaError_t sort_rows(void* temp, std::size_t& temp_bytes, const SelectionRows& b, const int* begin, const int* end,
                      float* sorted_keys, int* sorted_order, cudaStream_t stream) {
  return cub::DeviceSegmentedRadixSort::SortPairsDescending(temp, temp_bytes, b.sort_keys, sorted_keys, b.order,
                                                            sorted_order, b.rows * b.size, b.rows, begin, end, 0,
                                                            static_cast<int>(sizeof(float) * 8), stream);
}

cudaError_t position_rows(const SelectionRows& b, const float* alpha_by_key, const float* sorted_keys,
                          const int* sorted_order, cudaStream_t stream) {
  gather_kernel<<<blocks_for(static_cast<std::int64_t>(b.rows) * b.size), kThreads, 0, stream>>>(
      b, alpha_by_key, sorted_keys, sorted_order);
  minima_kernel<<<blocks_for(b.rows), kThreads, 0, stream>>>(b);
  sums_kernel<<<blocks_for(static_cast<std::int64_t>(b.rows) * b.dim), kThreads, 0, stream>>>(b);
  dots_kernel<<<blocks_for(static_cast<std::int64_t>(b.rows) * b.grid * b.size), kThreads, 0, stream>>>(b);
  return cudaGetLastError();
}

cudaError_t mass_rows(const SelectionRows& b, const float* alpha_by_key, const float* sorted_keys,
                      const geometry::MassOptions& options, double* rest, geometry::MassStats* mass,
                      geometry::HeadMagnitudes* magnitudes, cudaStream_t stream) {
  rest_kernel<<<blocks_for(static_cast<std::int64_t>(b.rows) * b.dim), kThreads, 0, stream>>>(b, alpha_by_key, rest);
  mass_kernel<<<blocks_for(b.rows), kThreads, 0, stream>>>(b, alpha_by_key, sorted_keys, options, rest, mass,
                                                           magnitudes);
  return cudaGetLastError();
}

cudaError_t evaluate_rows(const SelectionRows& b, cudaStream_t stream) {
  evaluate_kernel<<<blocks_for(static_cast<std::int64_t>(b.rows) * b.grid), kThreads, 0, stream>>>(b);
  return cudaGetLastError();
}

}  // namespace attngeom::cuda
