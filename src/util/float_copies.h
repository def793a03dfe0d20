#pragma once
// Copies of float arrays in buffers that are kept, once the last holder of a copy lets go, for
// the copies after it. Pages the process has written before take no faults: a fresh
// allocation's pages cost the kernel's zeroing on first touch, several times the copy itself,
// and the copies that ObserverQueue makes of each layer sit on the forward pass's thread.
// Thread-safe; a copy may outlive its pool (its buffer is then freed).
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace attngeom {

class FloatCopies : public std::enable_shared_from_this<FloatCopies> {
 public:
  // Keeps at most `kept_bytes` of buffers; beyond that a released buffer is freed.
  static std::shared_ptr<FloatCopies> make(std::size_t kept_bytes);

  // values[0, count) in the kept buffer that fits it most tightly; where none fits, in the
  // largest kept one, grown; where none is kept, in a new one.
  std::shared_ptr<const std::vector<float>> copy(const float* values, std::size_t count);

  std::size_t kept_buffers() const;

 private:
  explicit FloatCopies(std::size_t kept_bytes) : max_kept_bytes_(kept_bytes) {}
  void keep(std::vector<float>* buffer);

  const std::size_t max_kept_bytes_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<std::vector<float>>> kept_;
  std::size_t kept_bytes_ = 0;
};

}  // namespace attngeom
