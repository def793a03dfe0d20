#include "model/observer_queue.h"

#include <omp.h>

#include <algorithm>
#include <utility>

#include "util/error.h"

namespace attngeom {

int concurrent_layer_workers(int threads) { return std::clamp(threads / 4, 1, 4); }

ObserverQueue::ObserverQueue(ForwardObserver& observer, std::size_t max_pending_bytes, int workers)
    : observer_(&observer), max_pending_bytes_(max_pending_bytes), copies_(FloatCopies::make(max_pending_bytes)) {
  // A new thread starts from OpenMP's initial thread count, not the caller's (--threads).
  const int threads = omp_get_max_threads();
  if (workers <= 0) workers = observer.layers_concurrent() ? concurrent_layer_workers(threads) : 1;
  const int per_worker = std::max(1, threads / workers);
  for (int w = 0; w < workers; ++w) {
    workers_.emplace_back([this, per_worker] {
      omp_set_num_threads(per_worker);
      work();
    });
  }
}

ObserverQueue::~ObserverQueue() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    calls_.clear();
  }
  changed_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ObserverQueue::observe(ForwardObserver& observer) {
  ATTNGEOM_CHECK(observer.layers_concurrent() == observer_->layers_concurrent());
  observer_ = &observer;
}

std::exception_ptr ObserverQueue::error_of(const ForwardObserver* observer) const {
  const auto failed =
      std::find_if(failures_.begin(), failures_.end(), [observer](const Failure& f) { return f.observer == observer; });
  return failed == failures_.end() ? nullptr : failed->error;
}

void ObserverQueue::enqueue(int layer, std::size_t bytes, std::function<void(ForwardObserver&)> call) {
  std::unique_lock lock(mutex_);
  changed_.wait(
      lock, [&] { return error_of(observer_) || pending_bytes_ == 0 || pending_bytes_ + bytes <= max_pending_bytes_; });
  if (const std::exception_ptr error = error_of(observer_)) std::rethrow_exception(error);
  pending_bytes_ += bytes;
  calls_.push_back({observer_, layer, bytes, std::move(call)});
  changed_.notify_all();
}

void ObserverQueue::work() {
  std::unique_lock lock(mutex_);
  // The first waiting call of a layer that no worker is running: each layer's calls stay in order.
  const auto next = [&] {
    return std::find_if(calls_.begin(), calls_.end(), [&](const Call& c) {
      return std::find(running_.begin(), running_.end(), c.key()) == running_.end();
    });
  };
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || next() != calls_.end(); });
    if (stopping_) return;
    const auto at = next();
    Call call = std::move(*at);
    calls_.erase(at);
    running_.push_back(call.key());
    lock.unlock();
    std::exception_ptr error;
    try {
      call.run(*call.observer);
    } catch (...) {
      error = std::current_exception();
    }
    call.run = nullptr;  // its copies go before the lock is taken again
    lock.lock();
    running_.erase(std::find(running_.begin(), running_.end(), call.key()));
    pending_bytes_ -= call.bytes;
    if (error && !error_of(call.observer)) {
      failures_.push_back({call.observer, error});
      const auto of_observer = [&call](const Call& c) { return c.observer == call.observer; };
      for (const Call& dropped : calls_) {
        if (of_observer(dropped)) pending_bytes_ -= dropped.bytes;
      }
      std::erase_if(calls_, of_observer);
    }
    changed_.notify_all();
  }
}

template <class Of>
void ObserverQueue::wait_for_calls(Of of) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] {
    return std::none_of(calls_.begin(), calls_.end(), [&](const Call& c) { return of(c.observer); }) &&
           std::none_of(running_.begin(), running_.end(), [&](const Layer& l) { return of(l.observer); });
  });
  for (const Failure& failure : failures_) {
    if (of(failure.observer)) std::rethrow_exception(failure.error);
  }
}

void ObserverQueue::finish() {
  wait_for_calls([](const ForwardObserver*) { return true; });
}

void ObserverQueue::finish(const ForwardObserver& observer) {
  wait_for_calls([&observer](const ForwardObserver* of) { return of == &observer; });
}

void ObserverQueue::on_values(int layer, const ValueStates& values) {
  ATTNGEOM_CHECK(values.space == MemorySpace::kHost);
  const std::size_t count = static_cast<std::size_t>(values.kv_heads) * static_cast<std::size_t>(values.seq) *
                            static_cast<std::size_t>(values.head_dim);
  last_values_ = copies_->copy(values.values, count);
  ValueStates shape = values;
  shape.values = last_values_->data();
  enqueue(layer, count * sizeof(float), [layer, shape, copy = last_values_](ForwardObserver& observer) {
    ATTNGEOM_CHECK(shape.values == copy->data());
    observer.on_values(layer, shape);
  });
}

void ObserverQueue::on_attention(int layer, const AttentionRows& rows) {
  ATTNGEOM_CHECK(rows.space == MemorySpace::kHost);
  const std::size_t count =
      static_cast<std::size_t>(rows.heads()) * rows.positions.size() * static_cast<std::size_t>(rows.seq);
  std::shared_ptr<const std::vector<float>> probs = copies_->copy(rows.probs, count);  // [heads, rows, seq]
  std::vector<int> positions(rows.positions.begin(), rows.positions.end());
  const AttentionRows shape = rows;
  enqueue(layer, count * sizeof(float),
          [layer, shape, probs = std::move(probs), positions = std::move(positions),
           values = last_values_](ForwardObserver& observer) {
            ATTNGEOM_CHECK(values != nullptr);  // kept alive for the observer, which reads them still
            AttentionRows copy = shape;
            copy.positions = positions;
            copy.probs = probs->data();
            observer.on_attention(layer, copy);
          });
}

void ObserverQueue::on_routing(int layer, const ExpertRouting& routing) {
  std::vector<int> choices(routing.choices.begin(), routing.choices.end());
  std::vector<float> weights(routing.weights.begin(), routing.weights.end());
  std::vector<int> load(routing.load.begin(), routing.load.end());
  std::vector<int> flipped(routing.flipped.begin(), routing.flipped.end());
  const std::size_t bytes =
      (choices.size() + load.size() + flipped.size()) * sizeof(int) + weights.size() * sizeof(float);
  const ExpertRouting shape = routing;
  enqueue(layer, bytes,
          [layer, shape, choices = std::move(choices), weights = std::move(weights), load = std::move(load),
           flipped = std::move(flipped)](ForwardObserver& observer) {
            ExpertRouting copy = shape;
            copy.choices = choices;
            copy.weights = weights;
            copy.load = load;
            copy.flipped = flipped;
            observer.on_routing(layer, copy);
          });
}

}  // namespace attngeom
