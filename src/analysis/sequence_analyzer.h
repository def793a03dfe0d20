#pragma once
// The forward-pass observer of analyze: for every captured (layer, head, query row) it
// runs the geometry on alpha = that row over keys 0..q and V = the kv head's values of
// keys 0..q, and fills one SequenceRecord. Nothing T x T is stored: each block of heads'
// rows is analysed as it arrives, on all threads (heads and row ranges). The heads of a GQA
// group share the part that reads the values alone (geometry::ValueGeometry), computed first.
// Different layers may be analysed at once on different threads (layers_concurrent).
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "analysis/gpu_deviations.h"
#include "analysis/gpu_row_parts.h"
#include "analysis/instance_pool.h"
#include "analysis/record.h"
#include "geometry/row_analysis.h"
#include "model/config.h"
#include "model/observer.h"

namespace attngeom {

class SequenceAnalyzer final : public ForwardObserver {
 public:
  // The bounds' maximum cosine deviation is screened in bf16 on AMX, else in int8 with VNNI
  // (screen_products.h), unless options already name a kernel; with neither, in fp32. The
  // outputs are the same with any kernel.
  SequenceAnalyzer(const ModelConfig& config, const RecordSchema& schema, const geometry::RowAnalysisOptions& options);

  // Prepares the record for one sequence; `rows` are the ascending captured query positions.
  void begin(std::size_t sequence, std::span<const int> tokens, std::span<const int> rows);
  const SequenceRecord& record() const { return record_; }
  // Called with the number of layers analysed so far, after each layer's last block of heads.
  void on_layer_done(std::function<void(int layers_done)> callback) { layer_done_ = std::move(callback); }
  // Where the rows' cosine deviations are computed instead of the CPU (a GPU beside the
  // forward pass): the pool's objects, one per layer analysed at once; analyzers that take
  // turns share one pool. Not called: the CPU. Ignored unless reads_layer_deviations(options).
  void use_deviations(std::shared_ptr<InstancePool<LayerDeviations>> pool);
  // Where the rows' selection metrics, envelopes, mass statistics and magnitudes are computed
  // instead of the CPU, alike.
  // Ignored unless reads_layer_row_parts(options).
  void use_row_parts(std::shared_ptr<InstancePool<LayerRowParts>> pool);

  // Seconds each part of the analysis took in this sequence, summed over its layers: with
  // layers analysed at once (layers_concurrent) they can add up to more than the wall time.
  struct PartSeconds {
    // Shared per kv head and row (GQA, several rows, or a GPU beside): norms, rho_0, lag curve, and the
    // deviations when the CPU screens them; otherwise part of each head's row analysis.
    double value_geometry = 0.0;
    double deviations = 0.0;  // the cosine deviations computed elsewhere (a GPU)
    double row_parts = 0.0;   // the selection metrics, envelopes, mass and magnitudes computed elsewhere
    double heads = 0.0;       // per head and row on the CPU: the rest of analyze_row, the record
  };
  PartSeconds part_seconds() const;

  void on_values(int layer, const ValueStates& values) override;
  void on_attention(int layer, const AttentionRows& rows) override;
  void on_routing(int layer, const ExpertRouting& routing) override;
  bool layers_concurrent() const override { return true; }

 private:
  // One layer under analysis.
  struct LayerState {
    // The engine's buffer, valid until the layer's last on_attention (observer.h): not copied.
    ValueStates values;
    // [kv_heads, rows] for GQA layers (several heads per kv head) or deviations computed off
    // the CPU: filled for the kv heads of each block of heads; else empty.
    std::vector<geometry::ValueGeometry> shared;
    // [heads of the block, rows] the block's parts from row_parts_; else empty.
    std::vector<geometry::GivenRowParts> given;
  };

  // The value geometry of every (kv head, captured row) that the block's heads read.
  void share_values(LayerState& layer, const AttentionRows& rows);

  const ModelConfig& config_;
  const RecordSchema& schema_;
  std::unique_ptr<geometry::PairProducts> pair_products_;
  geometry::RowAnalysisOptions options_;
  SequenceRecord record_;                                      // each layer's calls write their own parts
  std::vector<LayerState> layers_;                             // [layers]
  std::shared_ptr<InstancePool<LayerDeviations>> deviations_;  // null: the CPU screens the deviations
  std::shared_ptr<InstancePool<LayerRowParts>> row_parts_;     // null: the CPU computes every part of each row
  std::function<void(int)> layer_done_;
  // Adds the seconds since `start` to one part (under mutex_).
  void add_seconds(double PartSeconds::*part, std::chrono::steady_clock::time_point start);

  mutable std::mutex mutex_;  // layer_done_, layers_done_ and parts_, which the layers share
  int layers_done_ = 0;       // in this sequence
  PartSeconds parts_;         // in this sequence
};

}  // namespace attngeom
