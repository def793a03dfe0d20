#pragma once
// Another observer's callbacks, run on worker threads, on copies of what they are given: the
// forward pass goes on with the next layers (on a GPU) while the host analyses the layers
// before. One worker runs every call in order; where the observer's layers_concurrent(),
// several workers each take one layer at a time (its calls in order), sharing the OpenMP
// threads, so that one layer's serial parts overlap the others' parallel work. Copies wait
// up to a byte budget; beyond it the forward pass waits (besides, each layer being analysed
// keeps its values copy until its last call: one per worker, and the layer being computed). The queue may pass one
// forward pass to one observer and the next to another (observe()), which then runs while the first still analyses its
// last layers.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "model/observer.h"
#include "util/float_copies.h"

namespace attngeom {

class ObserverQueue final : public ForwardObserver {
 public:
  // Copies waiting beyond this many bytes hold the forward pass back (one call always waits).
  static constexpr std::size_t kDefaultPendingBytes = std::size_t{1} << 30;

  // workers: 0 picks concurrent_layer_workers() of the threads where the observer's layers
  // are concurrent, else 1.
  explicit ObserverQueue(ForwardObserver& observer, std::size_t max_pending_bytes = kDefaultPendingBytes,
                         int workers = 0);
  // Drops the calls still waiting (after an error of the caller's) and stops the worker.
  ~ObserverQueue() override;
  ObserverQueue(const ObserverQueue&) = delete;
  ObserverQueue& operator=(const ObserverQueue&) = delete;

  void on_values(int layer, const ValueStates& values) override;
  void on_attention(int layer, const AttentionRows& rows) override;
  void on_routing(int layer, const ExpertRouting& routing) override;

  // The calls from now on go to `observer` (of the same layers_concurrent() as the first);
  // those before still reach the observer they were made for. From the forward pass's thread,
  // between two forward passes.
  void observe(ForwardObserver& observer);

  // Returns once every observer has seen every call; rethrows the first error any threw. An
  // observer's error drops its calls still waiting, and a call made for it afterwards rethrows
  // the error at once; other observers' calls go on.
  void finish();
  // Returns once `observer` has seen every call made for it; rethrows its own error only.
  void finish(const ForwardObserver& observer);
  int workers() const { return static_cast<int>(workers_.size()); }

 private:
  // `call` runs on the observer that is current now.
  void enqueue(int layer, std::size_t bytes, std::function<void(ForwardObserver&)> call);
  void work();
  // Waits until no call for which `of` holds is waiting or running; then rethrows the first
  // error of an observer for which `of` holds.
  template <class Of>
  void wait_for_calls(Of of);
  // The error `observer` threw, if any. Under the mutex.
  std::exception_ptr error_of(const ForwardObserver* observer) const;

  ForwardObserver* observer_;  // of the calls being made
  const std::size_t max_pending_bytes_;
  std::mutex mutex_;
  std::condition_variable changed_;
  // Calls of one (observer, layer) run in order, one at a time.
  struct Layer {
    const ForwardObserver* observer;
    int layer;
    bool operator==(const Layer&) const = default;
  };
  struct Call {
    ForwardObserver* observer;
    int layer;
    std::size_t bytes;
    std::function<void(ForwardObserver&)> run;
    Layer key() const { return {observer, layer}; }
  };
  std::deque<Call> calls_;
  std::size_t pending_bytes_ = 0;  // bytes of the calls waiting and running
  std::vector<Layer> running_;     // the layers whose calls run now
  bool stopping_ = false;
  struct Failure {
    const ForwardObserver* observer;
    std::exception_ptr error;
  };
  std::vector<Failure> failures_;  // the first error of each observer that threw, in order
  // The copies' buffers, kept for the next copies once the calls are done with them (up to the
  // byte budget again).
  std::shared_ptr<FloatCopies> copies_;
  // The last layer's values copy, which that layer's attention calls keep alive: the observer
  // reads it until the layer's last on_attention (observer.h). Forward thread only.
  std::shared_ptr<const std::vector<float>> last_values_;
  std::vector<std::thread> workers_;
};

// How many layers ObserverQueue analyses at once with `threads` OpenMP threads: about four
// threads each, at most four layers.
int concurrent_layer_workers(int threads);

}  // namespace attngeom
