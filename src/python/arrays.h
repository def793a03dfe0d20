#pragma once
// Hands C++ vectors to numpy without a copy: the array owns the vector through a capsule.
#include <pybind11/numpy.h>

#include <cstdint>
#include <vector>

namespace attngeom::python {

template <typename T>
pybind11::array_t<T> to_numpy(std::vector<T>&& data, std::vector<std::int64_t> shape) {
  auto* owned = new std::vector<T>(std::move(data));
  pybind11::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  std::vector<pybind11::ssize_t> dims(shape.begin(), shape.end());
  return pybind11::array_t<T>(dims, owned->data(), owner);
}

}  // namespace attngeom::python
