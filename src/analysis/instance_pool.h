#pragma once
// Objects that serve one caller at a time (a GPU stream with its memory), lent to callers on
// several threads: at most `limit` exist, each made on first need; a caller waits while all
// are lent. So layers analysed at once use the GPU at once, each with its own stream.
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "util/error.h"

namespace attngeom {

template <class T>
class InstancePool {
 public:
  InstancePool(std::function<std::unique_ptr<T>()> make, int limit) : make_(std::move(make)), limit_(limit) {
    ATTNGEOM_CHECK(limit >= 1 && make_);
  }

  // One instance for the lease's lifetime.
  class Lease {
   public:
    Lease(InstancePool& pool, std::unique_ptr<T> instance) : pool_(pool), instance_(std::move(instance)) {}
    ~Lease() { pool_.give_back(std::move(instance_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    T& operator*() const { return *instance_; }
    T* operator->() const { return instance_.get(); }

   private:
    InstancePool& pool_;
    std::unique_ptr<T> instance_;
  };

  Lease borrow() {
    std::unique_lock lock(mutex_);
    returned_.wait(lock, [this] { return !idle_.empty() || made_ < limit_; });
    if (idle_.empty()) {
      ++made_;  // counted first, so that a failed make still leaves the others their turn
      lock.unlock();
      try {
        return Lease(*this, make_());
      } catch (...) {
        const std::lock_guard relock(mutex_);
        --made_;
        returned_.notify_one();
        throw;
      }
    }
    std::unique_ptr<T> instance = std::move(idle_.back());
    idle_.pop_back();
    return Lease(*this, std::move(instance));
  }

  int made() const {
    const std::lock_guard lock(mutex_);
    return made_;
  }

 private:
  void give_back(std::unique_ptr<T> instance) {
    const std::lock_guard lock(mutex_);
    idle_.push_back(std::move(instance));
    returned_.notify_one();
  }

  std::function<std::unique_ptr<T>()> make_;
  const int limit_;
  mutable std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<T>> idle_;
  int made_ = 0;
};

}  // namespace attngeom
