#include "geometry/value_projection.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "util/error.h"

namespace attngeom::geometry {
namespace {

// kVectors vectors against kRows rows per pass: 2 x 8 AVX-512 registers of double sums, enough
// independent chains to hide the FMA latency, and each row value loaded and widened once per
// 16 products. A GEMM would need the rows widened and permuted
// into a [count, dim] double copy first, which cost as much as the products.
constexpr std::size_t kVectors = 16;
constexpr std::size_t kRows = 8;
using Sums = std::array<std::array<double, kVectors>, kRows>;

// sums[r][g] = <vectors_g, rows[r]>, vectors transposed: columns[t * kVectors + g].
void project_block(const std::array<const float*, kRows>& rows, const double* columns, std::size_t dim, Sums& sums) {
  sums = {};
  for (std::size_t t = 0; t < dim; ++t) {
    const double* column = columns + t * kVectors;
    for (std::size_t r = 0; r < kRows; ++r) {
      const double x = rows[r][t];
#pragma omp simd
      for (std::size_t g = 0; g < kVectors; ++g) sums[r][g] = std::fma(x, column[g], sums[r][g]);
    }
  }
}

}  // namespace

void project_rows_in_order(const float* rows, std::span<const std::size_t> order, std::size_t dim,
                           std::span<const double> vectors, std::span<double> out) {
  const std::size_t count = order.size();
  ATTNGEOM_CHECK(dim > 0 && vectors.size() % dim == 0);
  const std::size_t n_vectors = vectors.size() / dim;
  ATTNGEOM_CHECK(out.size() == n_vectors * count);
  std::vector<double> columns(dim * kVectors);  // [dim, kVectors] one block of vectors, zero padded
  for (std::size_t g0 = 0; g0 < n_vectors; g0 += kVectors) {
    const std::size_t block = std::min(kVectors, n_vectors - g0);
    std::fill(columns.begin(), columns.end(), 0.0);
    for (std::size_t g = 0; g < block; ++g) {
      for (std::size_t t = 0; t < dim; ++t) columns[t * kVectors + g] = vectors[(g0 + g) * dim + t];
    }
    for (std::size_t p0 = 0; p0 < count; p0 += kRows) {
      std::array<const float*, kRows> block_rows{};
      // Past the last position, repeat it: its sums are computed and dropped.
      for (std::size_t r = 0; r < kRows; ++r) block_rows[r] = rows + order[std::min(p0 + r, count - 1)] * dim;
      Sums sums;
      project_block(block_rows, columns.data(), dim, sums);
      for (std::size_t r = 0; r < kRows && p0 + r < count; ++r) {
        for (std::size_t g = 0; g < block; ++g) out[(g0 + g) * count + p0 + r] = sums[r][g];
      }
    }
  }
}

}  // namespace attngeom::geometry
