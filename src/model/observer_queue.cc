#include "model/observer_queue.h"

#include <omp.h>

#include <utility>

#include "util/error.h"

namespace attngeom {

ObserverQueue::ObserverQueue(ForwardObserver& observer, std::size_t max_pending_bytes)
    : observer_(observer), max_pending_bytes_(max_pending_bytes) {
  // A new thread starts from OpenMP's initial thread count, not the caller's (--threads).
  const int threads = omp_get_max_threads();
  worker_ = std::thread([this, threads] {
    omp_set_num_threads(threads);
    work();
  });
}

ObserverQueue::~ObserverQueue() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    calls_.clear();
  }
  changed_.notify_all();
  worker_.join();
}

void ObserverQueue::enqueue(std::size_t bytes, std::function<void()> call) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return error_ || pending_bytes_ == 0 || pending_bytes_ + bytes <= max_pending_bytes_; });
  if (error_) std::rethrow_exception(error_);
  pending_bytes_ += bytes;
  calls_.push_back({bytes, std::move(call)});
  changed_.notify_all();
}

void ObserverQueue::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !calls_.empty(); });
    if (calls_.empty()) return;
    Call call = std::move(calls_.front());
    calls_.pop_front();
    running_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      call.run();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    running_ = false;
    pending_bytes_ -= call.bytes;
    if (error && !error_) {
      error_ = error;
      for (const Call& dropped : calls_) pending_bytes_ -= dropped.bytes;
      calls_.clear();
    }
    changed_.notify_all();
  }
}

void ObserverQueue::finish() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return calls_.empty() && !running_; });
  if (error_) std::rethrow_exception(error_);
}

void ObserverQueue::on_values(int layer, const ValueStates& values) {
  ATTNGEOM_CHECK(values.space == MemorySpace::kHost);
  const std::size_t count = static_cast<std::size_t>(values.kv_heads) * static_cast<std::size_t>(values.seq) *
                            static_cast<std::size_t>(values.head_dim);
  auto copy = std::make_shared<const std::vector<float>>(values.values, values.values + count);
  ValueStates shape = values;
  enqueue(count * sizeof(float), [this, layer, shape, copy = std::move(copy)]() mutable {
    values_ = std::move(copy);
    shape.values = values_->data();
    observer_.on_values(layer, shape);
  });
}

void ObserverQueue::on_attention(int layer, const AttentionRows& rows) {
  ATTNGEOM_CHECK(rows.space == MemorySpace::kHost);
  const std::size_t count =
      static_cast<std::size_t>(rows.heads()) * rows.positions.size() * static_cast<std::size_t>(rows.seq);
  std::vector<float> probs(rows.probs, rows.probs + count);  // [heads, rows, seq]
  std::vector<int> positions(rows.positions.begin(), rows.positions.end());
  const AttentionRows shape = rows;
  enqueue(count * sizeof(float), [this, layer, shape, probs = std::move(probs), positions = std::move(positions)] {
    AttentionRows copy = shape;
    copy.positions = positions;
    copy.probs = probs.data();
    observer_.on_attention(layer, copy);
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
  enqueue(bytes, [this, layer, shape, choices = std::move(choices), weights = std::move(weights),
                  load = std::move(load), flipped = std::move(flipped)] {
    ExpertRouting copy = shape;
    copy.choices = choices;
    copy.weights = weights;
    copy.load = load;
    copy.flipped = flipped;
    observer_.on_routing(layer, copy);
  });
}

}  // namespace attngeom
