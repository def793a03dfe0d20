#pragma once
// The forward-pass observer of analyze: for every captured (layer, head, query row) it
// runs the geometry on alpha = that row over keys 0..q and V = the kv head's values of
// keys 0..q, and fills one SequenceRecord. Nothing T x T is stored: each head's rows
// are analysed as they arrive, in the attention worker threads. The heads of a GQA group
// share the part that reads the values alone (geometry::ValueGeometry).
#include <memory>
#include <mutex>
#include <span>

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

  void on_values(int layer, const float* values) override;
  void on_attention(int layer, int head, const float* probs) override;

 private:
  // The value geometry of one (kv head, captured row) of the layer being analysed: the first
  // head of the group to need it computes it, the others wait for it (std::call_once).
  struct SharedValues {
    std::once_flag once;
    geometry::ValueGeometry geometry;
  };
  const geometry::ValueGeometry& shared_values(int kv_head, std::size_t row_index, const geometry::HeadRowView& row);

  const ModelConfig& config_;
  const RecordSchema& schema_;
  std::unique_ptr<geometry::PairProducts> pair_products_;
  geometry::RowAnalysisOptions options_;
  SequenceRecord record_;
  // [kv_heads, T, head_dim] of the layer being analysed: the engine's buffer, valid until the
  // layer's last on_attention (observer.h), so it is not copied.
  const float* values_ = nullptr;
  // [kv_heads * rows] for GQA layers (several heads per kv head), reset by on_values; null
  // when every head has its own kv head.
  std::unique_ptr<SharedValues[]> shared_;
};

}  // namespace attngeom
