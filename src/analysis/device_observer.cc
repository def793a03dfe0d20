#include "analysis/device_observer.h"

#include <omp.h>

namespace attngeom {

std::uint64_t gpu_analysis_bytes(const ModelConfig& config, const geometry::RowAnalysisOptions& options,
                                 const GpuAnalysisPlacement& placement, int seq, std::size_t rows) {
  const bool deviations = placement.gpu_deviations && reads_layer_deviations(options);
  const bool row_parts = placement.gpu_selection && reads_layer_row_parts(options);
  return (deviations ? gpu_deviation_bytes(config, seq, rows) : 0) +
         (row_parts ? gpu_row_parts_bytes(config, seq, rows) : 0);
}

int fitting_gpu_instances(const Engine& engine, int seq, std::size_t rows, std::uint64_t bytes) {
  int instances = concurrent_layer_workers(omp_get_max_threads());
  while (instances > 1 && !engine.fits_gpu_memory(seq, rows, 0, bytes * static_cast<std::uint64_t>(instances)))
    --instances;
  return instances;
}

ForwardObserver& attach_analyzer(const Engine& engine, SequenceAnalyzer& analyzer, std::optional<ObserverQueue>& queue,
                                 const GpuAnalysisPlacement& placement) {
  if (engine.device() != Device::kCuda) return analyzer;
  ObserverQueue& q = queue.emplace(analyzer, ObserverQueue::kDefaultPendingBytes, placement.layer_workers);
  const int instances = placement.gpu_instances > 0 ? placement.gpu_instances : q.workers();
  const int gpu = engine.gpu();
  if (placement.gpu_deviations) analyzer.use_deviations([gpu] { return make_gpu_deviations(gpu); }, instances);
  if (placement.gpu_selection) analyzer.use_row_parts([gpu] { return make_gpu_row_parts(gpu); }, instances);
  return q;
}

}  // namespace attngeom
