#pragma once
// How analyze and bench take a run's sequences through the forward pass and the analysis. On
// a GPU each forward pass hands its layers to an ObserverQueue: the host analyses them while
// the GPU computes the next layers, and then the next sequence. Two SequenceAnalyzers take
// turns, each filling the record of one sequence in flight, so the next forward pass need not
// wait for the last layers' analysis. On the CPU one analyzer observes the forward pass itself.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "analysis/sequence_analyzer.h"
#include "model/observer_queue.h"

namespace attngeom {

class OverlappedSequences {
 public:
  struct Setup {
    bool queued = false;    // behind an ObserverQueue, two sequences in flight; else one, observed directly
    int layer_workers = 0;  // the queue's workers; 0: ObserverQueue's choice
    // Parts computed off the CPU (a GPU), shared by the turns; null: on the CPU.
    std::shared_ptr<InstancePool<LayerDeviations>> deviations;
    std::shared_ptr<InstancePool<LayerRowParts>> row_parts;
  };
  OverlappedSequences(const ModelConfig& config, const RecordSchema& schema,
                      const geometry::RowAnalysisOptions& options, const Setup& setup);

  // Called with the number of layers analysed so far in a sequence, after each of its layers.
  void on_layer_done(const std::function<void(int layers_done)>& callback);

  // Hands over the analyzer of a finished sequence: its record and seconds, valid until the
  // next call of analyze or finish.
  using Done = std::function<void(const SequenceAnalyzer&)>;
  // Runs forward(observer) for `sequence` (its tokens and ascending captured rows), then hands
  // `done` each sequence finished meanwhile, in order: this one where observed directly, else
  // the one before it. Where the forward pass fails, the one before it is still handed over
  // (or, where its own analysis failed, that earlier error is the one thrown).
  void analyze(std::size_t sequence, std::span<const int> tokens, std::span<const int> rows,
               const std::function<void(ForwardObserver&)>& forward, const Done& done);
  // Waits for the sequence still in flight, if any, and hands it to `done`.
  void finish(const Done& done);

  int layer_workers() const { return queue_ ? queue_->workers() : 0; }  // 0: observed directly

 private:
  std::vector<std::unique_ptr<SequenceAnalyzer>> turns_;  // [1 observed directly, 2 behind the queue]
  std::optional<ObserverQueue> queue_;                    // after turns_: its workers stop first
  std::size_t next_ = 0;                                  // the turn of the next sequence
  bool in_flight_ = false;                                // whether the other turn awaits finish
};

}  // namespace attngeom
