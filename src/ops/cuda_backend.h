#pragma once
// The NVIDIA GPU implementation of the compute seam (ops/backend.h): device memory, cuBLAS for
// every matrix product (true fp32 products without TF32 for the exact path; bf16 tensor-core
// products with fp32 accumulation for bf16) and the kernels of ops/cuda_kernels.h. Built only
// with CUDA (CMake ATTNGEOM_CUDA); no CUDA type appears here.
#include <cstddef>
#include <memory>
#include <string>

#include "ops/backend.h"
#include "ops/gemm.h"
#include "ops/timed_linear.h"

namespace attngeom {

struct CudaOptions {
  Precision precision = Precision::kFp32;
  int device = 0;                    // the GPU's ordinal
  LinearTimings* timings = nullptr;  // when set: every product and attention call is waited for and timed
  // Attention takes as many query rows at a time as keep their fp32 scores [heads, rows, seq]
  // within this (at least one row), so its memory stays linear in the sequence length.
  std::size_t attention_score_bytes = std::size_t{256} << 20;
  // bf16 attention without top-N takes every row's output from one fused kernel that keeps no
  // scores (cuda_kernels.h fused_attention), where the head dimension allows; false: the blocks.
  bool fused_attention = true;
};

// The first use of a GPU opens it on the calling thread; every op runs on one stream and the
// calls that hand data to the host (copy_to_host, heads_to_host, captured rows,
// count_nonfinite, synchronize) wait for it.
std::unique_ptr<Backend> make_cuda_backend(const CudaOptions& options);

struct CudaDeviceInfo {
  std::string name;
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  std::size_t shared_bytes_per_block = 0;  // the most shared memory one block of a kernel may ask for
};
// How many CUDA GPUs are visible; 0 with the reason in `why` when none is.
int cuda_device_count(std::string& why);
// GPU `device`'s name and memory; a SettingError naming "device" when no such GPU is visible.
CudaDeviceInfo cuda_device_info(int device);

}  // namespace attngeom
