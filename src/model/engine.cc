#include "model/engine.h"

#include "ops/cpu_backend.h"

namespace attngeom {
namespace {

std::unique_ptr<Backend> open_backend(const Weights& weights, const EngineOptions& options,
                                      const TimedLinearBackend*& timed) {
  std::unique_ptr<LinearBackend> linear = make_backend(options.precision, options.fp32_matmul, dominant_dtype(weights));
  if (options.timed) {
    auto timing = std::make_unique<TimedLinearBackend>(std::move(linear));
    timed = timing.get();
    linear = std::move(timing);
  }
  return make_cpu_backend(std::move(linear));
}

}  // namespace

std::string_view device_name(Device device) {
  switch (device) {
    case Device::kCpu:
      return "cpu";
  }
  return "cpu";
}

Engine::Engine(const ModelConfig& config, const Weights& weights, const EngineOptions& options)
    : device_(options.device),
      backend_(open_backend(weights, options, timed_)),
      weights_(upload_weights(config, weights, *backend_)),
      model_(config, weights_, *backend_) {}

}  // namespace attngeom
