// ObserverQueue: analyze's observer behind the queue (as on a GPU) fills the same record, bit
// for bit, as called directly, though every buffer it was handed is overwritten as soon as
// the call returns, with one worker or with several analysing layers at once; the observer's
// error reaches the caller and nothing after it is run.
#include "model/observer_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "analysis/row_fields.h"
#include "analysis/sequence_analyzer.h"
#include "attention_shape_config.h"
#include "util/error.h"

namespace attngeom {
namespace {

constexpr int kLayers = 3, kHeads = 4, kKvHeads = 2, kDim = 8, kSeq = 40;
constexpr float kOverwritten = std::numeric_limits<float>::quiet_NaN();

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// One sequence as the engine hands it over: per layer the values, then blocks of one kv group's
// heads, each from a buffer that the engine reuses (overwritten once the call returns).
void feed(ForwardObserver& observer, const std::vector<int>& rows, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<float> values(kKvHeads * kSeq * kDim);  // [kv, T, d]
  const int group = kHeads / kKvHeads;
  std::vector<float> probs(group * rows.size() * kSeq);  // [group heads, rows, T]
  for (int l = 0; l < kLayers; ++l) {
    for (float& v : values) v = gauss(rng);
    observer.on_values(l, ValueStates{kKvHeads, kSeq, kDim, values.data()});
    for (int begin = 0; begin < kHeads; begin += group) {
      std::fill(probs.begin(), probs.end(), 0.0f);
      for (std::size_t r = 0; r < rows.size() * group; ++r) {
        const int q = rows[r % rows.size()];
        float* p = probs.data() + r * kSeq;
        double sum = 0.0;
        for (int k = 0; k <= q; ++k) sum += p[k] = std::exp(2.0f * gauss(rng));
        for (int k = 0; k <= q; ++k) p[k] = static_cast<float>(p[k] / sum);
      }
      observer.on_attention(l, AttentionRows{begin, begin + group, rows, kSeq, probs.data()});
      std::fill(probs.begin(), probs.end(), kOverwritten);
    }
    std::fill(values.begin(), values.end(), kOverwritten);
  }
}

TEST(ObserverQueue, AnalysesCopiesAsTheObserverCalledDirectly) {
  const ModelConfig config = attention_shape_config(kLayers, kHeads, kKvHeads, kDim);
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

}  // namespace
}  // namespace attngeom
