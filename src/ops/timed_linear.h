#pragma once
// A LinearBackend that times every product of another and counts its FLOPs (2 * rows * in *
// out): the benchmark's split of a forward pass into linear layers and the rest.
#include <memory>

#include "ops/gemm.h"

namespace attngeom {

struct LinearTimings {
  double seconds = 0;
  double flops = 0;
};

class TimedLinearBackend final : public LinearBackend {
 public:
  explicit TimedLinearBackend(std::unique_ptr<LinearBackend> inner) : inner_(std::move(inner)) {}
  Precision precision() const override { return inner_->precision(); }
  std::string_view kernel() const override { return inner_->kernel(); }
  void linear_products(const LinearInput& x, std::span<const LinearOutput> outputs) override;
  const LinearTimings& timings() const { return timings_; }

 private:
  std::unique_ptr<LinearBackend> inner_;
  LinearTimings timings_;
};

}  // namespace attngeom
