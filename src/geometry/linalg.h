#pragma once
// The only door to the linear-algebra library (Eigen). Everything here is double precision,
// single-threaded (threads are the caller's business), and works on row-major arrays.
#include <cstddef>
#include <span>
#include <vector>

namespace attngeom::geometry {

// [count, count] gram[i, l] = <row_i, row_l>: one symmetric rank-k update (SYRK), mirrored to
// a full matrix.
std::vector<double> gram_matrix(std::span<const double> rows,  // [count, dim]
                                std::size_t count, std::size_t dim);

// Lower Cholesky factor of a symmetric positive semi-definite matrix, computed with a
// pivoted LDL^T so that semi-definite matrices (exact ties) also work. Returns false when
// the matrix has an eigenvalue below -tolerance * max diagonal (not PSD).
bool psd_factor(std::span<const double> matrix,  // [n, n]
                std::size_t n, double tolerance,
                std::span<double> factor);  // [n, n]: matrix = factor * factor^T

// out = a * b.
void multiply(std::span<const double> a,  // [rows, inner]
              std::span<const double> b,  // [inner, cols]
              std::size_t rows, std::size_t inner, std::size_t cols,
              std::span<double> out);  // [rows, cols]

}  // namespace attngeom::geometry
