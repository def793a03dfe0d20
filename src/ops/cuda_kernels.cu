// The element-wise and row-wise kernels of the CUDA backend (ops/cuda_kernels.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/cuda_block_reduce.cuh"
#include "ops/cuda_kernels.h"

namespace attngeom::cuda {
namespace {

constexpr int kThreads = 256;

int grid_for(std::int64_t count) {
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 * 16 ? (blocks > 0 ? blocks : 1) : 65535 * 16);
}

__device__ float load(Stored type, const void* data, std::int64_t i) {
  switch (type) {
    case Stored::kF16:
      return __half2float(static_cast<const __half*>(data)[i]);
    case Stored::kBF16:
      return __uint_as_float(static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(data)[i]) << 16);
    case Stored::kF32:
      break;
  }
  return static_cast<const float*>(data)[i];
}

#define ATTNGEOM_GRID_STRIDE(i, count)                                                                  \
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (count); \
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)

__global__ void widen_kernel(Stored type, const void* src, float* dst, std::int64_t count) {
  ATTNGEOM_GRID_STRIDE(i, count) dst[i] = load(type, src, i);
}

__global__ void to_bf16_kernel(Stored type, const void* src, std::uint16_t* dst, std::int64_t count) {
  ATTNGEOM_GRID_STRIDE(i, count) dst[i] = bf16_bits(load(type, src, i));
}

__global__ void embed_kernel(const int* tokens, std::int64_t count, Stored type, const void* table,
                             std::int64_t cols, float scale, float* x) {
  ATTNGEOM_GRID_STRIDE(i, count) {
    const float value = load(type, table, static_cast<std::int64_t>(tokens[i / cols]) * cols + i % cols);
    x[i] = scale != 1.0f ? value * scale : value;
  }
}

__global__ void add_bias_kernel(float* y, std::int64_t count, std::int64_t cols, Stored type, const void* bias) {
  ATTNGEOM_GRID_STRIDE(i, count) y[i] += load(type, bias, i % cols);
}

// One block per row; the mean and the mean square in double, as on the CPU.
__global__ void norm_kernel(const float* x, float* out, std::int64_t width, NormSpec norm) {
  __shared__ double partial[kMaxWarps];
  const float* xr = x + static_cast<std::int64_t>(blockIdx.x) * width;
  float* yr = out + static_cast<std::int64_t>(blockIdx.x) * width;
  double mean = 0;
  if (norm.centered) {
    for (std::int64_t i = threadIdx.x; i < width; i += blockDim.x) mean += xr[i];
    mean = block_reduce(mean, Sum{}, partial) / static_cast<double>(width);
  }
  double sum_sq = 0;
  for (std::int64_t i = threadIdx.x; i < width; i += blockDim.x) sum_sq += (xr[i] - mean) * (xr[i] - mean);
  sum_sq = block_reduce(sum_sq, Sum{}, partial);
  const double inv_scale = 1.0 / sqrt(sum_sq / static_cast<double>(width) + norm.eps);
  for (std::int64_t i = threadIdx.x; i < width; i += blockDim.x) {
    const float w = load(norm.weight_type, norm.weight, i);
    if (norm.centered) {
      const float b = norm.bias != nullptr ? load(norm.bias_type, norm.bias, i) : 0.0f;
      yr[i] = static_cast<float>((xr[i] - mean) * inv_scale) * w + b;
    } else {
      yr[i] = (xr[i] * static_cast<float>(inv_scale)) * (norm.offset + w);
    }
  }
}

__global__ void rope_kernel(float* x, std::int64_t count, int heads, int head_dim, int half, const float* table) {
  ATTNGEOM_GRID_STRIDE(n, count) {  // n = (p * heads + h) * half + i
    const std::int64_t i = n % half;
    const std::int64_t head = n / half;  // p * heads + h
    const std::int64_t p = head / heads;
    const float c = table[p * 2 * half + i];
    const float s = table[p * 2 * half + half + i];
    float* v = x + head * head_dim;
    const float x1 = v[i];
    const float x2 = v[i + half];
    v[i] = x1 * c - x2 * s;
    v[i + half] = x2 * c + x1 * s;
  }
}

__global__ void gated_kernel(int activation, const float* gate, const float* up, float* out, std::int64_t count) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  ATTNGEOM_GRID_STRIDE(i, count) {
    const float g = gate[i];
    float act;
    if (activation == 0) {  // silu, capped below expf's overflow as on the CPU
      act = g / (1.0f + expf(fminf(-g, 80.0f)));
    } else if (activation == 1) {  // gelu, tanh approximation
      act = 0.5f * g * (1.0f + tanhf(kSqrt2OverPi * (g + 0.044715f * g * g * g)));
    } else if (activation == 2) {  // gelu, erf
      act = 0.5f * g * (1.0f + erff(g * 0.7071067811865476f));
    } else {  // relu
      act = fmaxf(g, 0.0f);
    }
    out[i] = act * (up != nullptr ? up[i] : 1.0f);
  }
}

__global__ void add_kernel(float* x, const float* y, std::int64_t count) { ATTNGEOM_GRID_STRIDE(i, count) x[i] += y[i]; }

__global__ void soft_cap_kernel(float* x, std::int64_t count, float cap) {
  ATTNGEOM_GRID_STRIDE(i, count) x[i] = cap * tanhf(x[i] / cap);
}

__global__ void scale_kernel(float* x, std::int64_t count, float factor) {
  ATTNGEOM_GRID_STRIDE(i, count) x[i] *= factor;
}

__global__ void clamp_kernel(float* x, std::int64_t count, float limit) {
  ATTNGEOM_GRID_STRIDE(i, count) x[i] = x[i] < -limit ? -limit : x[i] > limit ? limit : x[i];
}

__global__ void nonfinite_kernel(const float* x, std::int64_t count, unsigned long long* counter) {
  unsigned long long found = 0;
  ATTNGEOM_GRID_STRIDE(i, count) found += isfinite(x[i]) ? 0 : 1;
  if (found > 0) atomicAdd(counter, found);
}

__global__ void gather_kernel(const float* x, std::int64_t cols, const int* rows, std::int64_t count, float* out) {
  ATTNGEOM_GRID_STRIDE(i, count) out[i] = x[static_cast<std::int64_t>(rows[i / cols]) * cols + i % cols];
}

__global__ void scatter_add_kernel(float* x, std::int64_t cols, const int* rows, std::int64_t count, const float* y,
                                   const float* weights) {
  ATTNGEOM_GRID_STRIDE(i, count) {
    const float weighted = __fmul_rn(weights[i / cols], y[i]);  // rounded, then summed: no fused multiply-add
    float& out = x[static_cast<std::int64_t>(rows[i / cols]) * cols + i % cols];
    out = __fadd_rn(out, weighted);
  }
}

__global__ void heads_major_kernel(const float* x, std::int64_t count, int seq, int heads, int head_dim, float* out) {
  ATTNGEOM_GRID_STRIDE(n, count) {  // n indexes out [heads, seq, head_dim]
    const std::int64_t j = n % head_dim;
    const std::int64_t i = (n / head_dim) % seq;
    const std::int64_t h = n / (static_cast<std::int64_t>(head_dim) * seq);
    out[n] = x[(i * heads + h) * head_dim + j];
  }
}

__global__ void scale_heads_kernel(float* out, std::int64_t count, int heads, int head_dim, const float* gates) {
  ATTNGEOM_GRID_STRIDE(n, count) out[n] *= gates[(n / head_dim) % heads];
}

}  // namespace

cudaError_t widen(Stored type, const void* src, float* dst, std::int64_t count, cudaStream_t stream) {
  widen_kernel<<<grid_for(count), kThreads, 0, stream>>>(type, src, dst, count);
  return cudaGetLastError();
}

cudaError_t to_bf16(Stored type, const void* src, std::uint16_t* dst, std::int64_t count, cudaStream_t stream) {
  to_bf16_kernel<<<grid_for(count), kThreads, 0, stream>>>(type, src, dst, count);
  return cudaGetLastError();
}

cudaError_t embed(const int* tokens, int count, Stored type, const void* table, std::int64_t cols, float scale, float* x,
           cudaStream_t stream) {
  const std::int64_t total = count * cols;
  embed_kernel<<<grid_for(total), kThreads, 0, stream>>>(tokens, total, type, table, cols, scale, x);
  return cudaGetLastError();
}

cudaError_t add_bias(float* y, std::int64_t rows, std::int64_t cols, Stored type, const void* bias, cudaStream_t stream) {
  add_bias_kernel<<<grid_for(rows * cols), kThreads, 0, stream>>>(y, rows * cols, cols, type, bias);
  return cudaGetLastError();
}

cudaError_t rms_norm(const float* x, float* out, std::int64_t rows, std::int64_t width, const NormSpec& norm,
                     cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;  // no blocks to launch
  const int threads = width >= 1024 ? 256 : width >= 256 ? 128 : 64;
  norm_kernel<<<static_cast<unsigned>(rows), threads, 0, stream>>>(x, out, width, norm);
  return cudaGetLastError();
}

cudaError_t rope(float* x, int seq, int heads, int head_dim, int rotary_dim, const float* table, cudaStream_t stream) {
  const std::int64_t count = static_cast<std::int64_t>(seq) * heads * (rotary_dim / 2);
  rope_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, count, heads, head_dim, rotary_dim / 2, table);
  return cudaGetLastError();
}

cudaError_t gated_activation(int activation, const float* gate, const float* up, float* out, std::int64_t count,
                      cudaStream_t stream) {
  gated_kernel<<<grid_for(count), kThreads, 0, stream>>>(activation, gate, up, out, count);
  return cudaGetLastError();
}

cudaError_t add_in_place(float* x, const float* y, std::int64_t count, cudaStream_t stream) {
  add_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, y, count);
  return cudaGetLastError();
}

cudaError_t soft_cap(float* x, std::int64_t count, float cap, cudaStream_t stream) {
  soft_cap_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, count, cap);
  return cudaGetLastError();
}

cudaError_t scale(float* x, std::int64_t count, float factor, cudaStream_t stream) {
  scale_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, count, factor);
  return cudaGetLastError();
}

cudaError_t clamp_symmetric(float* x, std::int64_t count, float limit, cudaStream_t stream) {
  clamp_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, count, limit);
  return cudaGetLastError();
}

cudaError_t count_nonfinite(const float* x, std::int64_t count, unsigned long long* counter, cudaStream_t stream) {
  const cudaError_t cleared = cudaMemsetAsync(counter, 0, sizeof *counter, stream);
  if (cleared != cudaSuccess) return cleared;
  nonfinite_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, count, counter);
  return cudaGetLastError();
}

cudaError_t gather_rows(const float* x, std::int64_t cols, const int* rows, int count, float* out, cudaStream_t stream) {
  const std::int64_t total = count * cols;
  gather_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, cols, rows, total, out);
  return cudaGetLastError();
}

cudaError_t scatter_add_rows(float* x, std::int64_t cols, const int* rows, int count, const float* y,
                             const float* weights, cudaStream_t stream) {
  const std::int64_t total = count * cols;
  scatter_add_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, cols, rows, total, y, weights);
  return cudaGetLastError();
}

cudaError_t heads_major(const float* x, int seq, int heads, int head_dim, float* out, cudaStream_t stream) {
  const std::int64_t count = static_cast<std::int64_t>(seq) * heads * head_dim;
  heads_major_kernel<<<grid_for(count), kThreads, 0, stream>>>(x, count, seq, heads, head_dim, out);
  return cudaGetLastError();
}

cudaError_t scale_heads(float* out, int seq, int heads, int head_dim, const float* gates, cudaStream_t stream) {
  const std::int64_t count = static_cast<std::int64_t>(seq) * heads * head_dim;
  scale_heads_kernel<<<grid_for(count), kThreads, 0, stream>>>(out, count, heads, head_dim, gates);
  return cudaGetLastError();
}

}  // namespace attngeom::cuda
