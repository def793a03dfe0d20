#include "analysis/device_observer.h"

namespace attngeom {

ForwardObserver& attach_analyzer(const Engine& engine, SequenceAnalyzer& analyzer, std::optional<ObserverQueue>& queue,
                                 const GpuAnalysisPlacement& placement) {
  if (engine.device() != Device::kCuda) return analyzer;
  if (placement.gpu_deviations) analyzer.use_deviations(make_gpu_deviations(engine.gpu()));
  if (placement.gpu_selection) analyzer.use_row_parts(make_gpu_row_parts(engine.gpu()));
  return queue.emplace(analyzer, ObserverQueue::kDefaultPendingBytes, placement.layer_workers);
}

}  // namespace attngeom
