// The selection-metric kernels (ops/cuda_selection_kernels.h). Compiled without contracted
// multiply-adds (--fmad=false), like the CPU geometry (-ffp-contract=off): the explicit fma of
// the projections is the only fused operation on either side.
#include <cub/device/device_segmented_radix_sort.cuh>

#include "geometry/mass_step.h"
#include "geometry/selection_step.h"
#include "ops/cuda_block_reduce.cuh"
#include "ops/cuda_selection_kernels.h"

namespace attngeom::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 65535;
// The dynamic shared memory of evaluate_kernel stays within the 48 KiB a launch may take
// without asking, beside its static arrays.
constexpr std::size_t kMaxRadiusSharedBytes = 32 * 1024;

int blocks_for(std::int64_t count) {
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

// Every index in [0, count), spread over the grid.
#define FOR_EACH_INDEX(i, count)                                                                       \
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (count); \
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)

// Three [size] arrays of eight bytes per evaluation: offset, recomputed, recomputed_d2.
__host__ __device__ std::size_t scratch_bytes_of(int size) { return 3 * static_cast<std::size_t>(size) * 8; }

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

// Pass 1 of evaluate_kernel: every key's offset (recomputed from the vectors where it cancels,
// the positions listed in order a block of positions at a time), the extrema, and the first
// minimum of the cross projections in position order, as the CPU's loop keeps it.
__device__ geometry::SelectionPasses offsets_pass(const geometry::PositionedView<int>& view, int n, const double* dots,
                                                  const double* s, double s_norm2, geometry::SelectionScratch& scratch,
                                                  double* shared, int* shared_counts) {
  namespace step = geometry::selection_step;
  const auto keys = static_cast<int>(view.keys);
  geometry::SelectionPasses passes;
  double e_max = -HUGE_VAL;
  double e_min = HUGE_VAL;
  double projection_max = -HUGE_VAL;
  double cross_min = HUGE_VAL;
  int cross_at = keys;  // the position of this thread's first minimum
  int recomputed = 0;
  for (int base = 0; base < keys; base += static_cast<int>(blockDim.x)) {
    const int p = base + static_cast<int>(threadIdx.x);
    bool exact = false;
    double d2 = 0.0;
    if (p < keys) {
      const double a = view.alpha[p];
      double e = step::expanded_offset(a, view.sq_norms[p], dots[p]);
      exact = step::cancels(s_norm2, e, a, view.sq_norms[p]);
      if (exact) {
        d2 = step::direct_squared_distance(view.value(static_cast<std::size_t>(p)), a, s, view.dim);
        e = d2 - s_norm2;
      }
      scratch.offset[p] = e;
      if (p < n) {
        e_max = fmax(e_max, e);
        const double cross = step::cross_projection(view.value(static_cast<std::size_t>(p)), a, s, view.dim, dots[p],
                                                    view.sq_norms[p], exact);
        if (cross < cross_min) cross_min = cross, cross_at = p;
      } else {
        e_min = fmin(e_min, e);
        projection_max = fmax(projection_max, dots[p]);
      }
    }
    int total = 0;
    const int before = block_exclusive_count(exact, shared_counts, total);
    if (exact) {
      scratch.recomputed[recomputed + before] = static_cast<std::size_t>(p);
      scratch.recomputed_d2[recomputed + before] = d2;
    }
    recomputed += total;
  }
  scratch.recomputed_count = static_cast<std::size_t>(recomputed);
  passes.e_max = block_reduce(e_max, MaxOf{}, shared);
  passes.e_min = block_reduce(e_min, MinOf{}, shared);
  passes.max_unselected_projection = block_reduce(projection_max, MaxOf{}, shared);
  const double cross_lowest = block_reduce(cross_min, MinOf{}, shared);
  const int first_lowest = block_reduce(cross_min == cross_lowest ? cross_at : keys, MinOf{}, shared_counts);
  __shared__ double cross_first;
  if (cross_at == first_lowest && cross_min == cross_lowest) cross_first = cross_min;
  __syncthreads();
  passes.min_selected_cross_projection = cross_first;
  return passes;
}

// Block (row r, N = n_values[g]) at blockIdx.x = r * grid + g: evaluate_selection's metrics with
// the keys shared among the threads, three passes over them, each giving the CPU's values
// whatever the order of the threads (max and min are exact, counts are integers). The selected
// offsets are sorted in shared memory (N <= kMaxSelected), which leaves the candidates as
// fill_best_f's partial sort does; thread 0 scores them.
__global__ void evaluate_kernel(SelectionRows b) {
  namespace step = geometry::selection_step;
  const std::int64_t rg = blockIdx.x;
  const auto [r, n, keys] = evaluation_of(b, rg);
  if (n >= keys) return;
  const std::int64_t at = static_cast<std::int64_t>(r) * b.size;
  geometry::PositionedView<int> view;
  view.keys = static_cast<std::size_t>(keys);
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
  const double* dots = b.dots + rg * b.size;
  const double* s = b.sums + rg * b.dim;
  const double s_norm2 = step::squared_norm_of(s, view.dim);  // every thread the same bits

  __shared__ double shared[kMaxWarps];
  __shared__ int shared_counts[kMaxWarps];
  geometry::SelectionPasses passes = offsets_pass(view, n, dots, s, s_norm2, scratch, shared, shared_counts);

  // Pass 2: the counts at r_max and r_min, and each side's points by the first normalised radius
  // whose ball holds them (the radii ascending, so a point is inside from that radius on).
  extern __shared__ __align__(8) unsigned char radius_memory[];  // radius_shared_bytes
  const int radii = b.radius_count;
  double* radius_offsets = reinterpret_cast<double*>(radius_memory);   // [radii]
  int* first_radius = reinterpret_cast<int*>(radius_offsets + radii);  // [2, radii + 1] selected, unselected
  ATTNGEOM_FOR_EACH_IN_BLOCK(i, 0, radii) {
    radius_offsets[i] = geometry::radius_offset(b.normalised_radii[i], s_norm2);
  }
  ATTNGEOM_FOR_EACH_IN_BLOCK(i, 0, 2 * (radii + 1)) { first_radius[i] = 0; }
  __syncthreads();
  int unselected_inside = 0;
  int selected_inside = 0;
  ATTNGEOM_FOR_EACH_IN_BLOCK(p, 0, keys) {
    const double e = scratch.offset[p];
    const bool is_selected = p < n;
    if (is_selected) {
      selected_inside += e <= passes.e_min;
    } else {
      unselected_inside += e <= passes.e_max;
    }
    int first = 0;  // the first radius whose offset is at least e (radii: none)
    while (first < radii && !(e <= radius_offsets[first])) ++first;
    atomicAdd(&first_radius[(is_selected ? 0 : radii + 1) + first], 1);
  }
  passes.unselected_inside_r_max = static_cast<std::size_t>(block_reduce(unselected_inside, Sum{}, shared_counts));
  passes.selected_inside_r_min = static_cast<std::size_t>(block_reduce(selected_inside, Sum{}, shared_counts));

  __shared__ double sorted[kMaxSelected];
  ATTNGEOM_FOR_EACH_IN_BLOCK(i, 0, n) sorted[i] = scratch.offset[i];
  block_sort_ascending(sorted, n);
  const auto first =
      static_cast<int>(step::min_candidate_tp(static_cast<std::size_t>(n), passes.unselected_inside_r_max, 0)) - 1;
  const double* candidates = sorted + first;  // ascending, the last is r_max
  const int count = n - first;

  // Pass 3: each unselected point within r_max tallied at its first candidate.
  __shared__ int tally[kMaxSelected];
  ATTNGEOM_FOR_EACH_IN_BLOCK(i, 0, count) tally[i] = 0;
  __syncthreads();
  int fp_below = 0;
  ATTNGEOM_FOR_EACH_IN_BLOCK(p, n, keys) {
    const double d = scratch.offset[p];
    if (d < candidates[0]) {
      ++fp_below;
    } else if (d <= candidates[count - 1]) {
      atomicAdd(&tally[step::lower_bound_index(candidates, static_cast<std::size_t>(count), d)], 1);
    }
  }
  fp_below = block_reduce(fp_below, Sum{}, shared_counts);  // its barriers order the tallies too

  if (threadIdx.x != 0) return;
  geometry::SelectionPoint& m = b.points[rg];
  geometry::fill_point(view, static_cast<std::size_t>(n), s_norm2, dots, scratch, passes, m);
  const double f_before = m.f_best;
  double best_offset = 0.0;
  step::scan_candidates(candidates, static_cast<std::size_t>(count), tally, static_cast<std::size_t>(first),
                        static_cast<std::size_t>(fp_below), static_cast<std::size_t>(n), m, best_offset);
  if (m.f_best > f_before) m.f_best_radius = step::radius_of(scratch, best_offset, s_norm2);
  int inside[2] = {0, 0};
  for (int i = 0; i < radii; ++i) {
    inside[0] += first_radius[i];
    inside[1] += first_radius[radii + 1 + i];
    b.curves[rg * radii + i] = geometry::ball_scores(static_cast<std::size_t>(inside[0]),
                                                     static_cast<std::size_t>(inside[1]), static_cast<std::size_t>(n));
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
  // Each radius's offset and two counts by first radius in shared memory, beside the sort's.
  const std::size_t radius_shared_bytes =
      static_cast<std::size_t>(b.radius_count) * sizeof(double) + 2 * (b.radius_count + 1) * sizeof(int);
  if (radius_shared_bytes > kMaxRadiusSharedBytes) return cudaErrorInvalidValue;
  evaluate_kernel<<<b.rows * b.grid, kThreads, radius_shared_bytes, stream>>>(b);
  return cudaGetLastError();
}

}  // namespace attngeom::cuda
