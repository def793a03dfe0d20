#include "util/float_copies.h"

#include <algorithm>

namespace attngeom {

std::shared_ptr<FloatCopies> FloatCopies::make(std::size_t kept_bytes) {
  return std::shared_ptr<FloatCopies>(new FloatCopies(kept_bytes));
}

std::shared_ptr<const std::vector<float>> FloatCopies::copy(const float* values, std::size_t count) {
  std::unique_ptr<std::vector<float>> buffer;
  {
    const std::lock_guard lock(mutex_);
    // The tightest that fits; where none does, the largest, to grow: so that there are never
    // more buffers than copies held at once.
    const auto fits_better = [count](const auto& a, const auto& b) {
      const bool a_fits = a->capacity() >= count, b_fits = b->capacity() >= count;
      if (a_fits != b_fits) return a_fits;
      return a_fits ? a->capacity() < b->capacity() : a->capacity() > b->capacity();
    };
    const auto best = std::min_element(kept_.begin(), kept_.end(), fits_better);
    if (best != kept_.end()) {
      buffer = std::move(*best);
      kept_.erase(best);
      kept_bytes_ -= buffer->capacity() * sizeof(float);
    }
  }
  if (!buffer) buffer = std::make_unique<std::vector<float>>();
  buffer->assign(values, values + count);  // within its capacity: no new pages
  const std::weak_ptr<FloatCopies> pool = weak_from_this();
  return std::shared_ptr<const std::vector<float>>(buffer.release(), [pool](std::vector<float>* released) {
    if (const std::shared_ptr<FloatCopies> owner = pool.lock()) {
      owner->keep(released);
    } else {
      delete released;
    }
  });
}

void FloatCopies::keep(std::vector<float>* buffer) {
  std::unique_ptr<std::vector<float>> owned(buffer);
  const std::size_t bytes = owned->capacity() * sizeof(float);
  const std::lock_guard lock(mutex_);
  if (kept_bytes_ + bytes > max_kept_bytes_) return;  // freed
  kept_bytes_ += bytes;
  kept_.push_back(std::move(owned));
}

std::size_t FloatCopies::kept_buffers() const {
  const std::lock_guard lock(mutex_);
  return kept_.size();
}

}  // namespace attngeom
