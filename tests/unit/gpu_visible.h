#pragma once
// Whether the GPU tests can run here: a GPU that this build can use. Where ATTNGEOM_EXPECT_GPU
// is set (scripts/gpu-check.sh, on a machine lent for its GPU), none is a failure rather than
// a skip, so that a driver the build cannot use does not pass for a machine without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "ops/cuda_backend.h"

namespace attngeom::testing {

inline bool gpu_visible() {
  std::string why;
  if (cuda_device_count(why) > 0) return true;
  if (std::getenv("ATTNGEOM_EXPECT_GPU") != nullptr)
    ADD_FAILURE() << "ATTNGEOM_EXPECT_GPU is set, but no GPU is visible (" << why << ")";
  return false;
}

}  // namespace attngeom::testing
