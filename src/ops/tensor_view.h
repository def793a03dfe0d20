#pragma once
// A non-owning, named 2-D view `[rows, cols]` (row-major) in its stored dtype.
// Linear weights keep the PyTorch `[out, in]` layout.
#include <cstdint>
#include <string>

#include "util/half.h"

namespace attngeom {

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  const void* data = nullptr;

  std::int64_t numel() const { return rows * cols; }
  const void* row(std::int64_t r) const {
    return static_cast<const std::uint8_t*>(data) + r * cols * static_cast<std::int64_t>(dtype_size(dtype));
  }
};

}  // namespace attngeom
