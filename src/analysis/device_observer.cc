#include "analysis/device_observer.h"

#include <omp.h>

namespace attngeom {
namespace {

// GPU memory one instance of each part that `placement` puts on the GPU takes, for sequences
// of `seq` tokens with `rows` captured rows per head, analysed with `options`.
std::uint64_t gpu_analysis_bytes(const ModelConfig& config, const geometry::RowAnalysisOptions& options,
                                 const GpuAnalysisPlacement& placement, int seq, std::size_t rows) {
  const bool deviations = placement.gpu_deviations && reads_layer_deviations(options);
  const bool row_parts = placement.gpu_selection && reads_layer_row_parts(options);
  return (deviations ? gpu_deviation_bytes(config, seq, rows) : 0) +
         (row_parts ? gpu_row_parts_bytes(config, seq, rows) : 0);
}

int queue_workers(const GpuAnalysisPlacement& placement) {
  return placement.layer_workers > 0 ? placement.layer_workers : concurrent_layer_workers(omp_get_max_threads());
}

}  // namespace

GpuAnalysisPlacement fitted_placement(const Engine& engine, const ModelConfig& config,
                                      const geometry::RowAnalysisOptions& options, GpuAnalysisPlacement placement,
                                      int seq, std::size_t rows) {
  const std::uint64_t bytes = gpu_analysis_bytes(config, options, placement, seq, rows);
  int instances = queue_workers(placement);
  while (instances > 1 && !engine.fits_gpu_memory(seq, rows, 0, bytes * static_cast<std::uint64_t>(instances)))
    --instances;
  engine.check_gpu_memory(seq, rows, 0, bytes * static_cast<std::uint64_t>(instances));
  placement.gpu_instances = instances;
  return placement;
}

OverlappedSequences::Setup overlapped_setup(const Engine& engine, const GpuAnalysisPlacement& placement) {
  OverlappedSequences::Setup setup;
  if (engine.device() != Device::kCuda) return setup;
  setup.queued = true;
  setup.layer_workers = placement.layer_workers;
  // SequenceAnalyzer's layers are concurrent: as many workers as ObserverQueue then picks.
  const int instances = placement.gpu_instances > 0 ? placement.gpu_instances : queue_workers(placement);
  const int gpu = engine.gpu();
  if (placement.gpu_deviations) {
    setup.deviations =
        std::make_shared<InstancePool<LayerDeviations>>([gpu] { return make_gpu_deviations(gpu); }, instances);
  }
  if (placement.gpu_selection) {
    setup.row_parts =
        std::make_shared<InstancePool<LayerRowParts>>([gpu] { return make_gpu_row_parts(gpu); }, instances);
  }
  return setup;
}

}  // namespace attngeom
