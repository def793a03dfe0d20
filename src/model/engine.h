#pragma once
// One place that opens a model for computing: a backend for the device and precision, the
// checkpoint's weights as that backend reads them, and the forward pass over both.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/forward.h"
#include "model/weights.h"
#include "ops/backend.h"
#include "ops/gemm.h"
#include "ops/timed_linear.h"

namespace attngeom {

enum class Device { kCpu, kCuda };
std::string_view device_name(Device device);

// A device as the settings spell it: "cpu", "cuda" (GPU 0) or "cuda:N". Errors name "device".
struct DeviceChoice {
  Device device = Device::kCpu;
  int gpu = 0;             // the GPU's ordinal (kCuda)
  bool gpu_named = false;  // "cuda:N": the user chose the GPU
};
DeviceChoice parse_device(const std::string& text);
// One line per GPU the engine can run on ("cuda:0: NAME, F GiB free of T GiB"), or one line
// saying why there is none (no CUDA in this build, no GPU visible).
std::vector<std::string> describe_gpus();
// How many GPUs the engine can run on: 0 without CUDA in this build or without a visible GPU.
int visible_gpus();
// The GPU a launched process takes when its device is "cuda" without a number: its rank on
// its node (OMPI_COMM_WORLD_LOCAL_RANK; MPI_LOCALRANKID under MPICH's Hydra; SLURM_LOCALID
// under srun) modulo the visible GPUs, so a node's ranks spread over its GPUs and share them
// when there are fewer. 0 without a launcher or a visible GPU. `environment` returns a
// variable's value or null (std::getenv). Throws SettingError naming a malformed variable.
int launched_gpu(const std::function<const char*(const char*)>& environment, int visible_gpus);

struct EngineOptions {
  Device device = Device::kCpu;
  Precision precision = Precision::kFp32;
  Fp32Matmul fp32_matmul = Fp32Matmul::kSgemm;  // the CPU's fp32 kernel
  bool timed = false;                           // time the linear products (linear_timings)
  int gpu = 0;                                  // kCuda: the GPU's ordinal
  bool gpu_named = false;                       // kCuda: "cuda:N", the GPU chosen by the user
  bool blocked_attention = false;               // kCuda: attention in query blocks, not fused (bench)
};

// The compute settings as text ("cpu" | "cuda" | "cuda:N"; ops/precision_choice.h's precision
// and fp32_matmul) resolved: every front end's one route to EngineOptions. On a GPU, auto
// picks bf16 (its tensor cores' fast path). Errors name "device", "precision", "fp32_matmul".
struct ComputeChoice {
  EngineOptions options;
  std::string warning;  // a setting that has no effect here; empty: none. Front ends show it.
};
ComputeChoice choose_compute(const std::string& device, const std::string& precision, const std::string& fp32_matmul);

// GPU memory of one forward pass over `seq` tokens beside the weights: the activation
// buffers (forward_activation_bytes) and the CUDA backend's scratch as ops/cuda_backend.cc
// sizes it (a normed input; with bf16 the rounded inputs of the products and of attention;
// attention's block of scores, at most `score_bytes`, and its bf16 probabilities; one block
// of `capture_rows` captured rows; the values' staging), the logits of `logit_rows` rows, and
// an allowance for cuBLAS's workspace. An estimate: docs/gpu.md.
std::uint64_t gpu_forward_bytes(const ModelConfig& config, int seq, std::size_t capture_rows, std::size_t logit_rows,
                                Precision precision, std::size_t score_bytes);

class Engine {
 public:
  // `weights` (the checkpoint's views) must outlive the engine.
  Engine(const ModelConfig& config, const Weights& weights, const EngineOptions& options);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Transformer& model() { return model_; }
  const Backend& backend() const { return *backend_; }
  Device device() const { return device_; }
  // The GPU's name ("NVIDIA H100 80GB HBM3") on kCuda; empty on the CPU.
  const std::string& gpu_name() const { return gpu_name_; }
  // The GPU's ordinal on kCuda.
  int gpu() const { return gpu_; }
  // The linear products' time and FLOPs so far, when opened with `timed`; else null.
  const LinearTimings* linear_timings() const;
  // On a GPU, before the first sequence: throws SettingError naming "device", with both sizes,
  // when a forward pass of `seq` tokens (gpu_forward_bytes) and `analysis_bytes` of the caller's
  // own GPU work need more memory than the GPU has free beside the weights. Nothing on the CPU,
  // whose memory analyze's pre-flight checks.
  void check_gpu_memory(int seq, std::size_t capture_rows, std::size_t logit_rows,
                        std::uint64_t analysis_bytes = 0) const;
  // On a GPU, which attention kernels a layer of `seq` tokens with `capture_rows` captured
  // rows takes: "fused" (bf16, ops/attention_tiles.h fused_attention_fits) or "blocks"
  // (docs/gpu.md); empty on the CPU.
  std::string gpu_attention(int seq, std::size_t capture_rows) const;
  // Whether check_gpu_memory would pass (always on the CPU).
  bool fits_gpu_memory(int seq, std::size_t capture_rows, std::size_t logit_rows, std::uint64_t analysis_bytes) const;

 private:
  // A forward pass's GPU memory (gpu_forward_bytes) and the caller's analysis_bytes; CUDA builds only.
  std::uint64_t gpu_need_bytes(int seq, std::size_t capture_rows, std::size_t logit_rows,
                               std::uint64_t analysis_bytes) const;
  Device device_;
  int gpu_ = 0;
  bool blocked_attention_ = false;
  std::string gpu_name_;
  const TimedLinearBackend* timed_ = nullptr;      // the CPU's timed products
  std::unique_ptr<LinearTimings> device_timings_;  // a GPU's, when timed
  std::unique_ptr<Backend> backend_;
  BackendWeights weights_;
  Transformer model_;
};

}  // namespace attngeom
