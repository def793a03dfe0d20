// ObserverQueue: analyze's observer behind the queue (as on a GPU) fills the same record, bit
// for bit, as called directly, though every buffer it was handed is overwritten as soon as
// the call returns, with one worker or with several analysing layers at once, and with one
// forward pass handed to each of two observers; the observer's error reaches the caller and
// nothing of that observer's after it is run, while another observer's calls go on.
#include "model/observer_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "analysis/row_fields.h"
#include "analysis/sequence_analyzer.h"
#include "fed_forward.h"
#include "util/error.h"

namespace attngeom {
namespace {

using fed::feed;
using fed::kDim;
using fed::kKvHeads;
using fed::kLayers;
using fed::kOverwritten;
using fed::kSeq;
using fed::same_bits;

TEST(ObserverQueue, AnalysesCopiesAsTheObserverCalledDirectly) {
  const ModelConfig config = fed::config();
  const RecordSchema schema = make_record_schema(kSeq, false);
  const std::vector<int> tokens(kSeq, 1), rows = {7, 22, 39};
  SequenceAnalyzer direct(config, schema, geometry::RowAnalysisOptions{});
  direct.begin(0, tokens, rows);
  feed(direct, rows, 5);
  // A budget of one byte: every call waits for the one before it. Three workers: the layers
  // analysed at once.
  for (const int workers : {1, 3}) {
    for (const std::size_t budget : {ObserverQueue::kDefaultPendingBytes, std::size_t{1}}) {
      SequenceAnalyzer queued(config, schema, geometry::RowAnalysisOptions{});
      int layers_done = 0;
      queued.on_layer_done([&](int done) { layers_done = std::max(layers_done, done); });
      ObserverQueue queue(queued, budget, workers);
      for (int sequence = 0; sequence < 2; ++sequence) {  // the queue serves one sequence after another
        queued.begin(0, tokens, rows);
        feed(queue, rows, 5);
        queue.finish();
        const std::string where = "budget " + std::to_string(budget) + ", workers " + std::to_string(workers);
        EXPECT_TRUE(same_bits(queued.record().per_n, direct.record().per_n)) << where;
        EXPECT_TRUE(same_bits(queued.record().per_row, direct.record().per_row)) << where;
        EXPECT_EQ(queued.record().profile, direct.record().profile) << where;
        EXPECT_EQ(layers_done, kLayers) << where;
      }
    }
  }
}

// Passes every call on to an analyzer, but holds its layer 0's values until released (or a
// timeout passes).
class HeldAnalyzer final : public ForwardObserver {
 public:
  explicit HeldAnalyzer(SequenceAnalyzer& analyzer) : analyzer_(analyzer) {}
  void on_values(int layer, const ValueStates& values) override {
    if (layer == 0) {
      std::unique_lock lock(mutex_);
      released_in_time = released_.wait_for(lock, std::chrono::seconds(20), [&] { return released; });
    }
    analyzer_.on_values(layer, values);
  }
  void on_attention(int layer, const AttentionRows& rows) override { analyzer_.on_attention(layer, rows); }
  bool layers_concurrent() const override { return analyzer_.layers_concurrent(); }
  void release() {
    const std::lock_guard lock(mutex_);
    released = true;
    released_.notify_all();
  }
  bool released = false;
  bool released_in_time = false;

 private:
  SequenceAnalyzer& analyzer_;
  std::mutex mutex_;
  std::condition_variable released_;
};

TEST(ObserverQueue, HandsEachForwardPassToItsObserverAndFinishesThemApart) {
  const ModelConfig config = fed::config();
  const RecordSchema schema = make_record_schema(kSeq, false);
  const std::vector<int> tokens(kSeq, 1), rows = {3, 30, 39};
  std::vector<SequenceRecord> direct;
  for (const std::uint64_t seed : {5, 6}) {
    SequenceAnalyzer analyzer(config, schema, geometry::RowAnalysisOptions{});
    analyzer.begin(0, tokens, rows);
    feed(analyzer, rows, seed);
    direct.push_back(analyzer.record());
  }
  SequenceAnalyzer first(config, schema, geometry::RowAnalysisOptions{});
  SequenceAnalyzer second(config, schema, geometry::RowAnalysisOptions{});
  HeldAnalyzer held(first);
  ObserverQueue queue(held, ObserverQueue::kDefaultPendingBytes, 2);
  first.begin(0, tokens, rows);
  feed(queue, rows, 5);
  queue.observe(second);
  second.begin(0, tokens, rows);
  feed(queue, rows, 6);
  queue.finish(second);  // while the first forward pass's layer 0 is held
  held.release();
  queue.finish(held);
  queue.finish();
  EXPECT_TRUE(held.released_in_time);
  EXPECT_TRUE(same_bits(first.record().per_n, direct[0].per_n));
  EXPECT_TRUE(same_bits(first.record().per_row, direct[0].per_row));
  EXPECT_TRUE(same_bits(second.record().per_n, direct[1].per_n));
  EXPECT_TRUE(same_bits(second.record().per_row, direct[1].per_row));
  EXPECT_FALSE(same_bits(first.record().per_n, second.record().per_n));
}

// Holds layer 0's values call until layer 1's has begun (or a timeout passes): only a queue
// that runs layers at once gets through without waiting. Records each layer's calls in order.
class ConcurrentObserver final : public ForwardObserver {
 public:
  void on_values(int layer, const ValueStates&) override {
    std::unique_lock lock(mutex_);
    calls_[layer].push_back("values");
    started_ = std::max(started_, layer);
    changed_.notify_all();
    if (layer == 0) overlapped = changed_.wait_for(lock, std::chrono::seconds(20), [&] { return started_ >= 1; });
  }
  void on_attention(int layer, const AttentionRows& rows) override {
    const std::lock_guard lock(mutex_);
    calls_[layer].push_back("attention " + std::to_string(rows.head_begin));
  }
  bool layers_concurrent() const override { return true; }
  std::vector<std::string> calls(int layer) {
    const std::lock_guard lock(mutex_);
    return calls_[layer];
  }
  bool overlapped = false;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int started_ = -1;
  std::map<int, std::vector<std::string>> calls_;
};

TEST(ObserverQueue, RunsLayersAtOnceEachInOrder) {
  ConcurrentObserver observer;
  ObserverQueue queue(observer, ObserverQueue::kDefaultPendingBytes, 2);
  feed(queue, {5, 9}, 3);
  queue.finish();
  EXPECT_TRUE(observer.overlapped);
  for (int l = 0; l < kLayers; ++l) {
    EXPECT_EQ(observer.calls(l), (std::vector<std::string>{"values", "attention 0", "attention 2"})) << l;
  }
}

// Records what it was called with, on which thread, and fails on one layer's attention.
class RecordingObserver final : public ForwardObserver {
 public:
  explicit RecordingObserver(int failing_layer) : failing_layer_(failing_layer) {}
  void on_values(int layer, const ValueStates& values) override {
    calls.push_back("values " + std::to_string(layer) + " " + std::to_string(values.values[0]));
    thread = std::this_thread::get_id();
  }
  void on_attention(int layer, const AttentionRows& rows) override {
    if (layer == failing_layer_) throw InputError("model.layers." + std::to_string(layer) + ": broken");
    calls.push_back("attention " + std::to_string(layer) + " heads " + std::to_string(rows.head_begin));
  }
  void on_routing(int layer, const ExpertRouting& routing) override {
    calls.push_back("routing " + std::to_string(layer) + " " + std::to_string(routing.choices[1]) + " " +
                    std::to_string(routing.weights[1]) + " " + std::to_string(routing.load[2]) + " " +
                    std::to_string(routing.flipped[0]) + " " + std::to_string(routing.flips));
  }
  std::vector<std::string> calls;
  std::thread::id thread;

 private:
  int failing_layer_;
};

TEST(ObserverQueue, CopiesRoutingAndRunsOnItsOwnThread) {
  RecordingObserver recording(-1);
  {
    ObserverQueue queue(recording);
    std::vector<float> values(kKvHeads * kSeq * kDim, 0.25f);
    queue.on_values(0, ValueStates{kKvHeads, kSeq, kDim, values.data()});
    values.assign(values.size(), kOverwritten);
    std::vector<int> choices = {3, 1, 0, 2}, load = {1, 1, 1, 1}, flipped = {1, 0};
    std::vector<float> weights = {0.75f, 0.25f, 0.5f, 0.5f};
    queue.on_routing(0, ExpertRouting{2, 4, 2, choices, weights, load, flipped, 1});
    choices.assign(4, -1), weights.assign(4, -1.0f), load.assign(4, -1), flipped.assign(2, -1);
    queue.finish();
  }
  EXPECT_EQ(recording.calls, (std::vector<std::string>{"values 0 0.250000", "routing 0 1 0.250000 1 1 1"}));
  EXPECT_NE(recording.thread, std::this_thread::get_id());
}

TEST(ObserverQueue, RethrowsTheObserversErrorAndRunsNothingAfterIt) {
  RecordingObserver recording(1);
  ObserverQueue queue(recording);
  std::string error;
  try {
    feed(queue, {5, 9}, 3);
    queue.finish();
  } catch (const InputError& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "model.layers.1: broken");
  ASSERT_EQ(recording.calls.size(), 4u);  // layer 0's values and two blocks, layer 1's values
  EXPECT_EQ(recording.calls[2], "attention 0 heads 2");
  EXPECT_EQ(recording.calls[3].rfind("values 1 ", 0), 0u);
  EXPECT_THROW(queue.finish(), InputError);  // and again for any later call
}

// The forward pass after a failed one goes on with its own observer: the failure is that
// observer's alone, which finish(observer) and finish() report.
TEST(ObserverQueue, AnObserversErrorLeavesTheNextObserversCalls) {
  RecordingObserver failing(1), healthy(-1);
  ObserverQueue queue(failing);
  try {
    feed(queue, {5, 9}, 3);
  } catch (const InputError&) {  // layer 1 may fail before the last layers are handed over
  }
  EXPECT_THROW(queue.finish(failing), InputError);
  queue.observe(healthy);
  feed(queue, {5, 9}, 4);
  queue.finish(healthy);
  EXPECT_EQ(healthy.calls.size(), static_cast<std::size_t>(3 * kLayers));  // each layer's values and two blocks
  EXPECT_EQ(failing.calls.size(), 4u);
  EXPECT_THROW(queue.finish(), InputError);
}

}  // namespace
}  // namespace attngeom
