#include "model/engine.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "ops/cpu_backend.h"
#include "ops/precision_choice.h"
#include "util/error.h"
#if ATTNGEOM_WITH_CUDA
#include "ops/attention_tiles.h"
#include "ops/cuda_backend.h"
#endif

namespace attngeom {
namespace {

std::unique_ptr<Backend> open_cpu(const Weights& weights, const EngineOptions& options,
                                  const TimedLinearBackend*& timed) {
  std::unique_ptr<LinearBackend> linear = make_backend(options.precision, options.fp32_matmul, dominant_dtype(weights));
  if (options.timed) {
    auto timing = std::make_unique<TimedLinearBackend>(std::move(linear));
    timed = timing.get();
    linear = std::move(timing);
  }
  return make_cpu_backend(std::move(linear));
}

#if ATTNGEOM_WITH_CUDA
// The bytes the GPU holds for `weights`: each tensor as stored, and a converted copy of each
// matrix that the products read in another dtype (ops/cuda_backend.cc).
double gpu_weight_bytes(const ModelConfig& config, const Weights& weights, Precision precision) {
  const DType operand = precision == Precision::kBf16 ? DType::kBF16 : DType::kF32;
  Weights source = weights;
  double bytes = 0;
  for (const WeightSlot& slot : weight_slots(config)) {
    const TensorView& view = tensor_at(source, slot);
    const auto numel = static_cast<double>(view.numel());
    bytes += numel * static_cast<double>(dtype_size(view.dtype));
    const bool product = slot.shape.size() >= 2 && (slot.role != TensorRole::kEmbed || config.tie_embeddings);
    if (product && view.dtype != operand) bytes += numel * static_cast<double>(dtype_size(operand));
  }
  return bytes;
}

std::unique_ptr<Backend> open_cuda(const ModelConfig& config, const Weights& weights, const EngineOptions& options,
                                   LinearTimings* timings, std::string& gpu_name) {
  const CudaDeviceInfo gpu = cuda_device_info(options.gpu);
  gpu_name = gpu.name;
  const double needed = gpu_weight_bytes(config, weights, options.precision);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  if (needed > static_cast<double>(gpu.free_bytes)) {
    char sizes[160];
    std::snprintf(sizes, sizeof sizes,
                  "the weights need %.2f GiB on the GPU in %s, and %s has %.2f GiB free of %.2f GiB", needed / kGiB,
                  std::string(precision_name(options.precision)).c_str(), gpu.name.c_str(),
                  static_cast<double>(gpu.free_bytes) / kGiB, static_cast<double>(gpu.total_bytes) / kGiB);
    throw SettingError({setting("device"), " cuda:" + std::to_string(options.gpu) + ": " + sizes});
  }
  CudaOptions cuda{options.precision, options.gpu, timings};
  cuda.fused_attention = !options.blocked_attention;
  return make_cuda_backend(cuda);
}
#endif

std::unique_ptr<Backend> open_backend(const ModelConfig& config, const Weights& weights, const EngineOptions& options,
                                      const TimedLinearBackend*& timed, std::unique_ptr<LinearTimings>& device_timings,
                                      std::string& gpu_name) {
  if (options.device == Device::kCpu) return open_cpu(weights, options, timed);
#if ATTNGEOM_WITH_CUDA
  if (options.timed) device_timings = std::make_unique<LinearTimings>();
  return open_cuda(config, weights, options, device_timings.get(), gpu_name);
#else
  throw SettingError({setting("device"),
                      " cuda: this build of attngeom has no CUDA (configure with -DATTNGEOM_CUDA=ON where the CUDA "
                      "toolkit is installed; docs/gpu.md)"});
#endif
}

}  // namespace

std::string_view device_name(Device device) {
  switch (device) {
    case Device::kCpu:
      return "cpu";
    case Device::kCuda:
      return "cuda";
  }
  return "cpu";
}

DeviceChoice parse_device(const std::string& text) {
  if (text == "cpu") return {Device::kCpu, 0, false};
  if (text == "cuda") return {Device::kCuda, 0, false};
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() <= 8 &&
      text.find_first_not_of("0123456789", 5) == std::string::npos) {
    return {Device::kCuda, std::stoi(text.substr(5)), true};
  }
  throw SettingError({setting("device"), " '" + text + "': expected cpu, cuda or cuda:N (N: the GPU's number)"});
}

ComputeChoice choose_compute(const std::string& device, const std::string& precision, const std::string& fp32_matmul) {
  const DeviceChoice where = parse_device(device);
  if (where.device == Device::kCpu) {
    const PrecisionChoice cpu = choose_precision(precision, fp32_matmul);
    return {{Device::kCpu, cpu.precision, cpu.fp32_matmul, false, 0, false}, cpu.warning};
  }
  if (precision != "auto" && precision != "fp32" && precision != "bf16") {
    throw SettingError({setting("precision"), " '" + precision + "': expected auto, fp32 or bf16"});
  }
  if (fp32_matmul != "sgemm" && fp32_matmul != "bf16x3") {
    throw SettingError({setting("fp32_matmul"), " '" + fp32_matmul + "': expected sgemm or bf16x3"});
  }
  ComputeChoice choice{{where.device, precision == "fp32" ? Precision::kFp32 : Precision::kBf16, Fp32Matmul::kSgemm,
                        false, where.gpu, where.gpu_named},
                       {}};
  if (fp32_matmul == "bf16x3") choice.warning = "fp32_matmul bf16x3 has no effect on a GPU (it picks a CPU kernel)";
  return choice;
}

std::vector<std::string> describe_gpus() {
#if ATTNGEOM_WITH_CUDA
  std::string why;
  const int count = cuda_device_count(why);
  if (count == 0) return {"cuda: no GPU is visible (" + why + ")"};
  std::vector<std::string> lines;
  for (int gpu = 0; gpu < count; ++gpu) {
    const CudaDeviceInfo info = cuda_device_info(gpu);
    char line[200];
    std::snprintf(line, sizeof line, "cuda:%d: %s, %.1f GiB free of %.1f GiB", gpu, info.name.c_str(),
                  static_cast<double>(info.free_bytes) / (1 << 30), static_cast<double>(info.total_bytes) / (1 << 30));
    lines.emplace_back(line);
  }
  return lines;
#else
  return {"cuda: not in this build (configure with -DATTNGEOM_CUDA=ON where the CUDA toolkit is installed)"};
#endif
}

int visible_gpus() {
#if ATTNGEOM_WITH_CUDA
  std::string why;
  return cuda_device_count(why);
#else
  return 0;
#endif
}

int launched_gpu(const std::function<const char*(const char*)>& environment, int visible_gpus) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* value = environment(name);
    if (value == nullptr) continue;
    const std::string_view text(value);
    int local_rank = -1;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), local_rank);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || local_rank < 0) {
      throw SettingError({setting("device"), std::string(" cuda: ") + name + "='" + value +
                                                 "' is not a local rank (a non-negative integer)"});
    }
    return visible_gpus > 0 ? local_rank % visible_gpus : 0;
  }
  return 0;
}

std::uint64_t gpu_forward_bytes(const ModelConfig& c, int seq, std::size_t capture_rows, std::size_t logit_rows,
                                Precision precision, std::size_t score_bytes) {
  constexpr std::uint64_t kFloat = sizeof(float), kBf16 = 2;
  constexpr std::uint64_t kCublasWorkspace = std::uint64_t{64} << 20;
  const auto t = static_cast<std::uint64_t>(seq);
  const bool bf16 = precision == Precision::kBf16;
  const auto widest_input = static_cast<std::uint64_t>(
      std::max({c.hidden, c.q_dim(), c.intermediate, c.recipe.moe.intermediate}));  // a product's input
  std::uint64_t bytes = forward_activation_bytes(c, seq, precision);
  bytes += t * static_cast<std::uint64_t>(c.hidden) * kFloat;    // normed input
  bytes += t * static_cast<std::uint64_t>(c.kv_dim()) * kFloat;  // values' staging
  if (bf16) bytes += t * (widest_input + c.q_dim() + 2 * static_cast<std::uint64_t>(c.kv_dim())) * kBf16;
  // Attention: whole kv groups of heads at a time while capturing, query rows in blocks.
  const AttentionShape shape{seq, c.heads, c.kv_heads, c.head_dim, 0, 1.0f, 0.0f};
  const auto heads = static_cast<std::uint64_t>(capture_rows > 0 ? capture_block_heads(shape, capture_rows) : c.heads);
  const std::uint64_t rows = score_block_rows(score_bytes, heads, t);
  bytes += heads * rows * t * (kFloat + (bf16 ? kBf16 : 0));
  bytes += heads * capture_rows * t * kFloat;
  bytes += static_cast<std::uint64_t>(logit_rows) * static_cast<std::uint64_t>(c.vocab + c.hidden) * kFloat;
  return bytes + kCublasWorkspace;
}

Engine::Engine(const ModelConfig& config, const Weights& weights, const EngineOptions& options)
    : device_(options.device),
      gpu_(options.gpu),
      blocked_attention_(options.blocked_attention),
      backend_(open_backend(config, weights, options, timed_, device_timings_, gpu_name_)),
      weights_(upload_weights(config, weights, *backend_)),
      model_(config, weights_, *backend_) {}

#if ATTNGEOM_WITH_CUDA
std::uint64_t Engine::gpu_need_bytes(int seq, std::size_t capture_rows, std::size_t logit_rows,
                                     std::uint64_t analysis_bytes) const {
  return gpu_forward_bytes(model_.config(), seq, capture_rows, logit_rows, backend_->precision(),
                           CudaOptions{}.attention_score_bytes) +
         analysis_bytes;
}
#endif

std::string Engine::gpu_attention(int seq, std::size_t capture_rows) const {
#if ATTNGEOM_WITH_CUDA
  if (device_ != Device::kCuda) return {};
  const bool fused =
      backend_->precision() == Precision::kBf16 && !blocked_attention_ &&
      fused_attention_fits(model_.config().head_dim, cuda_device_info(gpu_).shared_bytes_per_block, capture_rows, seq);
  return fused ? "fused" : "blocks";
#else
  (void)seq, (void)capture_rows;
  return {};
#endif
}

bool Engine::fits_gpu_memory(int seq, std::size_t capture_rows, std::size_t logit_rows,
                             std::uint64_t analysis_bytes) const {
#if ATTNGEOM_WITH_CUDA
  if (device_ != Device::kCuda) return true;
  return gpu_need_bytes(seq, capture_rows, logit_rows, analysis_bytes) <= cuda_device_info(gpu_).free_bytes;
#else
  (void)seq, (void)capture_rows, (void)logit_rows, (void)analysis_bytes;
  return true;
#endif
}

void Engine::check_gpu_memory(int seq, std::size_t capture_rows, std::size_t logit_rows,
                              std::uint64_t analysis_bytes) const {
#if ATTNGEOM_WITH_CUDA
  if (device_ != Device::kCuda) return;
  const std::uint64_t need = gpu_need_bytes(seq, capture_rows, logit_rows, analysis_bytes);
  const CudaDeviceInfo gpu = cuda_device_info(gpu_);
  if (need <= gpu.free_bytes) return;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  char sizes[240];
  std::snprintf(sizes, sizeof sizes,
                "a sequence of %d tokens needs about %.2f GiB of GPU memory beside the weights, and %s has %.2f GiB "
                "free of %.2f GiB once they are loaded; use a shorter sequence or fewer query rows",
                seq, static_cast<double>(need) / kGiB, gpu.name.c_str(), static_cast<double>(gpu.free_bytes) / kGiB,
                static_cast<double>(gpu.total_bytes) / kGiB);
  throw SettingError({setting("device"), " cuda:" + std::to_string(gpu_) + ": " + sizes});
#else
  (void)seq, (void)capture_rows, (void)logit_rows, (void)analysis_bytes;
#endif
}

const LinearTimings* Engine::linear_timings() const {
  if (timed_ != nullptr) return &timed_->timings();
  return device_timings_.get();
}

}  // namespace attngeom
