#include "analysis/device_observer.h"

namespace attngeom {

ForwardObserver& attach_analyzer(const Engine& engine, SequenceAnalyzer& analyzer,
                                 std::optional<ObserverQueue>& queue) {
  if (engine.device() != Device::kCuda) return analyzer;
  analyzer.use_deviations(make_gpu_deviations(engine.gpu()));
  return queue.emplace(analyzer);
}

}  // namespace attngeom
