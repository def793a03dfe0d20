#pragma once
// Per-row attention mass statistics, docs/method.md section 3.
#include <cstddef>
#include <span>

#include "geometry/mass_step.h"

namespace attngeom::geometry {

// alpha: [M], a validated softmax row.
MassStats mass_stats(std::span<const float> alpha, const MassOptions& options = {});

}  // namespace attngeom::geometry
