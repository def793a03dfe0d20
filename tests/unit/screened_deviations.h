#pragma once
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "analysis/gpu_deviations.h"
#include "geometry/value_diagnostics.h"

namespace attngeom {

// Deviations computed apart, as the CPU's own screen computes them (the same bits), so that
// only the analyzer's hand-over is under test: which kv heads and rows, and into which entries.
class ScreenedDeviations final : public LayerDeviations {
 public:
  explicit ScreenedDeviations(int* calls) : calls_(calls) {}
  void fill(const ValueStates& values, int kv_begin, int kv_end, std::span<const int> positions,
            std::span<geometry::ValueGeometry> geometry) override {
    ++*calls_;
    ASSERT_EQ(geometry.size(), static_cast<std::size_t>(kv_end - kv_begin) * positions.size());
    for (int kv = kv_begin; kv < kv_end; ++kv) {
      for (std::size_t q = 0; q < positions.size(); ++q) {
        const auto keys = static_cast<std::size_t>(positions[q]) + 1;
        const std::vector<float> alpha(keys, 1.0f / static_cast<float>(keys));  // the values alone are read
        const auto d = static_cast<std::size_t>(values.head_dim);
        const geometry::HeadRowView row{alpha, std::span<const float>(values.kv_head(kv), keys * d), d};
        geometry::ValueGeometry& g = geometry[static_cast<std::size_t>(kv - kv_begin) * positions.size() + q];
        EXPECT_EQ(g.keys, keys);
        g.deviation =
            geometry::screened_cosine_deviation(geometry::unit_rows(row), g.model, geometry::fp32_pair_products());
      }
    }
  }

 private:
  int* calls_;
};

}  // namespace attngeom
