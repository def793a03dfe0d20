// Which CUDA GPUs there are, and their names and memory (ops/cuda_backend.h).
#include <cuda_runtime.h>

#include <string>

#include "ops/cuda_backend.h"
#include "ops/cuda_memory.h"
#include "util/error.h"

namespace attngeom {

using cuda::check;

int cuda_device_count(std::string& why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    why = cudaGetErrorString(status);
    return 0;
  }
  return count;
}

CudaDeviceInfo cuda_device_info(int device) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    throw SettingError(
        {setting("device"), " cuda: no CUDA GPU is visible (" + std::string(cudaGetErrorString(status)) + ")"});
  }
  if (device < 0 || device >= count) {
    throw SettingError({setting("device"), " cuda:" + std::to_string(device) + ": this machine has " +
                                               std::to_string(count) + " CUDA GPU(s), numbered from 0"});
  }
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  int current = 0;
  check(cudaGetDevice(&current), "cudaGetDevice");
  check(cudaSetDevice(device), "cudaSetDevice");  // cudaMemGetInfo reads the current GPU
  CudaDeviceInfo info;
  info.name = properties.name;
  info.shared_bytes_per_block = properties.sharedMemPerBlockOptin;
  const cudaError_t status_memory = cudaMemGetInfo(&info.free_bytes, &info.total_bytes);
  check(cudaSetDevice(current), "cudaSetDevice");
  check(status_memory, "cudaMemGetInfo");
  return info;
}

}  // namespace attngeom
