#pragma once
// What the CUDA backend (ops/cuda_backend.cc) shares beside its ops: CUDA and cuBLAS errors as
// exceptions naming the step, a stored dtype as the kernels name it, and device or pinned host
// memory that grows to the largest size asked for. Host code only (C++20).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ops/cublas_library.h"
#include "ops/cuda_kernels.h"
#include "util/error.h"
#include "util/half.h"

namespace attngeom::cuda {

[[noreturn]] inline void fail(const char* step, const char* message) {
  throw std::runtime_error(std::string("CUDA: ") + step + ": " + message);
}
inline void check(cudaError_t status, const char* step) {
  if (status != cudaSuccess) fail(step, cudaGetErrorString(status));
}
inline void check(cublasStatus_t status, const char* step) {
  if (status != CUBLAS_STATUS_SUCCESS) fail(step, cublas_library().status_string(status));
}

inline Stored stored_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return Stored::kF32;
    case DType::kF16:
      return Stored::kF16;
    case DType::kBF16:
      return Stored::kBF16;
    case DType::kI32:
    case DType::kF64:
      break;
  }
  throw InputError(std::string("the CUDA backend reads F32, F16 and BF16 tensors, not ") +
                   std::string(dtype_name(dtype)));
}

struct DeviceFree {
  void operator()(void* memory) const { cudaFree(memory); }
};
struct HostFree {
  void operator()(void* memory) const { cudaFreeHost(memory); }
};

// Device (or pinned host) memory of T that grows to the largest size asked for; its contents
// do not survive growth.
template <class T, class Free = DeviceFree>
class Scratch {
 public:
  T* at_least(std::size_t count) {
    if (count > capacity_) {
      memory_.reset();
      capacity_ = 0;
      void* memory = nullptr;
      if constexpr (std::is_same_v<Free, HostFree>) {
        check(cudaMallocHost(&memory, count * sizeof(T)), "cudaMallocHost");
      } else {
        check(cudaMalloc(&memory, count * sizeof(T)), "cudaMalloc");
      }
      memory_.reset(memory);
      capacity_ = count;
    }
    return data();
  }
  T* data() { return static_cast<T*>(memory_.get()); }
  // Copies host values in, resized to fit (pageable memory: the copy is done when this returns).
  T* upload(std::span<const T> values, cudaStream_t stream) {
    T* device = at_least(std::max<std::size_t>(values.size(), 1));
    check(cudaMemcpyAsync(device, values.data(), values.size_bytes(), cudaMemcpyHostToDevice, stream),
          "copy to the GPU");
    return device;
  }

 private:
  std::unique_ptr<void, Free> memory_;
  std::size_t capacity_ = 0;
};

}  // namespace attngeom::cuda
