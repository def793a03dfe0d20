#include "analysis/overlapped_sequences.h"

#include <exception>

namespace attngeom {

OverlappedSequences::OverlappedSequences(const ModelConfig& config, const RecordSchema& schema,
                                         const geometry::RowAnalysisOptions& options, const Setup& setup) {
  for (int turn = 0; turn < (setup.queued ? 2 : 1); ++turn) {
    auto analyzer = std::make_unique<SequenceAnalyzer>(config, schema, options);
    if (setup.deviations) analyzer->use_deviations(setup.deviations);
    if (setup.row_parts) analyzer->use_row_parts(setup.row_parts);
    turns_.push_back(std::move(analyzer));
  }
  if (setup.queued) queue_.emplace(*turns_.front(), ObserverQueue::kDefaultPendingBytes, setup.layer_workers);
}

void OverlappedSequences::on_layer_done(const std::function<void(int)>& callback) {
  for (const auto& analyzer : turns_) analyzer->on_layer_done(callback);
}

void OverlappedSequences::analyze(std::size_t sequence, std::span<const int> tokens, std::span<const int> rows,
                                  const std::function<void(ForwardObserver&)>& forward, const Done& done) {
  SequenceAnalyzer& analyzer = *turns_[next_];
  analyzer.begin(sequence, tokens, rows);
  if (!queue_) {
    forward(analyzer);
    done(analyzer);
    return;
  }
  queue_->observe(analyzer);
  try {
    forward(*queue_);
  } catch (...) {
    const std::exception_ptr error = std::current_exception();
    finish(done);  // the sequence before; its analysis's error, where it failed, came first
    std::rethrow_exception(error);
  }
  finish(done);
  in_flight_ = true;
  next_ = 1 - next_;
}

void OverlappedSequences::finish(const Done& done) {
  if (!in_flight_) return;
  in_flight_ = false;
  const SequenceAnalyzer& before = *turns_[1 - next_];
  queue_->finish(before);
  done(before);
}

}  // namespace attngeom
