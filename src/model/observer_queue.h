#pragma once
// Another observer's callbacks, run on worker threads, on copies of what they are given: the
// forward pass goes on with the next layers (on a GPU) while the host analyses the layers
// before. One worker runs every call in order; where the observer's layers_concurrent(),
// several workers each take one layer at a time (its calls in order), sharing the OpenMP
// threads, so that one layer's serial parts overlap the others' parallel work. Copies wait
// up to a byte budget; beyond it the forward pass waits.
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

  // Returns once the observer has seen every call; rethrows the first error it threw (a call
  // after that error rethrows it at once, and the calls behind it are dropped).
  void finish();
  int workers() const { return static_cast<int>(workers_.size()); }

 private:
  void enqueue(int layer, std::size_t bytes, std::function<void()> call);
  void work();

  ForwardObserver& observer_;
  const std::size_t max_pending_bytes_;
  std::mutex mutex_;
  std::condition_variable changed_;
  struct Call {
    int layer;
    std::size_t bytes;
    std::function<void()> run;
  };
  std::deque<Call> calls_;
  std::size_t pending_bytes_ = 0;  // bytes of the calls waiting and running
  std::vector<int> running_;       // the layers whose calls run now
  bool stopping_ = false;
  std::exception_ptr error_;
  // The last layer's values copy, which that layer's attention calls keep alive: the observer
  // reads it until the layer's last on_attention (observer.h). Forward thread only.
  std::shared_ptr<const std::vector<float>> last_values_;
  std::vector<std::thread> workers_;
};

// How many layers ObserverQueue analyses at once with `threads` OpenMP threads: about four
// threads each, at most four layers.
int concurrent_layer_workers(int threads);

}  // namespace attngeom
