#pragma once
// One place that opens a model for computing: a backend for the device and precision, the
// checkpoint's weights as that backend reads them, and the forward pass over both.
#include <memory>
#include <string_view>

#include "model/config.h"
#include "model/forward.h"
#include "model/weights.h"
#include "ops/backend.h"
#include "ops/gemm.h"
#include "ops/timed_linear.h"

namespace attngeom {

enum class Device { kCpu };
std::string_view device_name(Device device);

struct EngineOptions {
  Device device = Device::kCpu;
  Precision precision = Precision::kFp32;
  Fp32Matmul fp32_matmul = Fp32Matmul::kSgemm;
  bool timed = false;  // time the linear products (linear_timings)
};

class Engine {
 public:
  // `weights` (the checkpoint's views) must outlive the engine.
  Engine(const ModelConfig& config, const Weights& weights, const EngineOptions& options);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Transformer& model() { return model_; }
  const Backend& backend() const { return *backend_; }
  Device device() const { return device_; }
  // The linear products' time and FLOPs so far, when opened with `timed`; else null.
  const LinearTimings* linear_timings() const { return timed_ != nullptr ? &timed_->timings() : nullptr; }

 private:
  Device device_;
  const TimedLinearBackend* timed_ = nullptr;
  std::unique_ptr<Backend> backend_;
  BackendWeights weights_;
  Transformer model_;
};

}  // namespace attngeom
