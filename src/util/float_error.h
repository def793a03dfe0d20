#pragma once
// Rounding-error bounds shared by the geometry's fp32 screen and the oneDNN screens of ops/.
#include <cstddef>

namespace attngeom {

// gamma_n = n u / (1 - n u): Higham's bound on the relative error of an n-term sum in a format
// with unit roundoff u, whatever the order.
double summation_error_factor(std::size_t terms, double unit_roundoff);

}  // namespace attngeom
