#include "util/float_error.h"

#include "util/error.h"

namespace attngeom {

double summation_error_factor(std::size_t terms, double unit_roundoff) {
  const double nu = static_cast<double>(terms) * unit_roundoff;
  ATTNGEOM_CHECK(nu < 1.0);
  return nu / (1.0 - nu);
}

}  // namespace attngeom
