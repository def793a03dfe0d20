#include "geometry/projection_sweep.h"

#include "util/error.h"

namespace attngeom::geometry {

ProjectionSweep::ProjectionSweep(std::span<const double> weights) : weights_(weights), dots_(weights.size(), 0.0) {}

void ProjectionSweep::add(std::size_t key, std::span<const double> column) {
  ATTNGEOM_CHECK(key < dots_.size() && column.size() == dots_.size());
  const double w = weights_[key];
  norm2_ += w * (2.0 * dots_[key] + w * column[key]);
  double* dots = dots_.data();
  const double* col = column.data();
  for (std::size_t k = 0; k < dots_.size(); ++k) dots[k] += w * col[k];
}

}  // namespace attngeom::geometry
