#include "ops/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "ops/cublas_library.h"
#include "ops/cuda_attention_products.h"
#include "ops/cuda_kernels.h"
#include "ops/cuda_memory.h"
#include "ops/elementwise.h"
#include "util/error.h"

namespace attngeom {
namespace {

constexpr MemorySpace kCuda = MemorySpace::kCuda;
using cuda::check;
using cuda::DeviceFree;
using cuda::HostFree;
using cuda::Scratch;
using cuda::stored_type;

const CublasLibrary& blas() { return cublas_library(); }

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaOptions& options)
      : device_(options.device),
        precision_(options.precision),
        timings_(options.timings),
        score_bytes_(options.attention_score_bytes),
        fused_attention_(options.fused_attention) {
    use_device();
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(blas().create(&blas_), "cublasCreate");
    check(blas().set_stream(blas_, stream_), "cublasSetStream");
    // The default math mode never rounds fp32 products to TF32 (that takes CUBLAS_TF32_TENSOR_OP_MATH).
    check(blas().set_math_mode(blas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    shared_limit_ = cuda_device_info(device_).shared_bytes_per_block;
    check(cuda::allow_fused_attention(shared_limit_), "cudaFuncSetAttribute (the fused attention's shared memory)");
  }
  ~CudaBackend() override {
    cudaSetDevice(device_);  // as in the other CUDA objects' destructors
    cudaStreamSynchronize(stream_);
    blas().destroy(blas_);
    cudaStreamDestroy(stream_);
  }

  MemorySpace space() const override { return kCuda; }
  Precision precision() const override { return precision_; }
  std::string_view kernel() const override { return precision_ == Precision::kBf16 ? "cublas-bf16" : "cublas-sgemm"; }

  Buffer allocate(std::int64_t rows, std::int64_t cols) override {
    use_device();
    void* memory = nullptr;
    const auto bytes = static_cast<std::size_t>(rows * cols) * sizeof(float);
    check(cudaMalloc(&memory, std::max<std::size_t>(bytes, 1)), "cudaMalloc (activations)");
    check(cudaMemsetAsync(memory, 0, bytes, stream_), "cudaMemset");
    return Buffer(kCuda, rows, cols, static_cast<float*>(memory), [](float* m) { cudaFree(m); });
  }

  Weight upload(const TensorView& stored) override {
    use_device();
    if (stored.data == nullptr) return Weight(kCuda, stored);
    stored_type(stored.dtype);
    const auto bytes = static_cast<std::size_t>(stored.numel()) * dtype_size(stored.dtype);
    void* memory = nullptr;
    check(cudaMalloc(&memory, bytes), "cudaMalloc (weights)");
    weights_.emplace_back(memory);
    // On the ops' stream, so that no kernel reads the weight before it has arrived.
    check(cudaMemcpyAsync(memory, stored.data, bytes, cudaMemcpyHostToDevice, stream_),
          "copy of the weights to the GPU");
    TensorView on_device = stored;
    on_device.data = memory;
    return Weight(kCuda, on_device);
  }

  Buffer rope_table(int seq, std::span<const double> inv_freq, double scale) override {
    use_device();
    Buffer table = allocate(seq, 2 * static_cast<std::int64_t>(inv_freq.size()));
    std::vector<float> host(static_cast<std::size_t>(table.numel()));
    make_rope_table(seq, inv_freq, scale, host.data());
    check(cudaMemcpyAsync(table.data(kCuda), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, stream_),
          "copy of the RoPE table to the GPU");
    return table;
  }

  void embed(std::span<const int> tokens, const Weight& table, float scale, Buffer& x) override {
    use_device();
    const TensorView& view = table.view(kCuda);
    ATTNGEOM_CHECK(view.cols == x.cols() && static_cast<std::int64_t>(tokens.size()) <= x.rows());
    for (const int token : tokens) ATTNGEOM_CHECK(token >= 0 && token < view.rows);
    check(cuda::embed(ints_.upload(tokens, stream_), static_cast<int>(tokens.size()), stored_type(view.dtype),
                      view.data, view.cols, scale, x.data(kCuda), stream_),
          "the embed kernel");
  }

  void linear(const LinearSource& source, std::span<const LinearTarget> outputs) override {
    products(source, outputs, precision_);
  }

  void linear_fp32(const LinearSource& source, std::span<const LinearTarget> outputs) override {
    products(source, outputs, Precision::kFp32);
  }

  void fill_zero(Buffer& x) override {
    use_device();
    check(cudaMemsetAsync(x.data(kCuda), 0, static_cast<std::size_t>(x.numel()) * sizeof(float), stream_),
          "cudaMemset");
  }

  // The products of `source` in `precision`: cublasSgemm in fp32, cublasGemmEx on bf16 inputs.
  void products(const LinearSource& source, std::span<const LinearTarget> outputs, Precision precision) {
    use_device();
    Buffer& x = *source.x;
    const std::int64_t rows = x.rows(), cols = x.cols();
    const float* input = x.data(kCuda);
    if (source.kind == LinearSource::Kind::kNormed) {
      float* normed = normed_.at_least(static_cast<std::size_t>(x.numel()));
      norm_rows(input, normed, rows, cols, source.norm);
      input = normed;
    } else if (source.kind == LinearSource::Kind::kGated) {
      ATTNGEOM_CHECK(source.up->rows() == rows && source.up->cols() == cols);
      check(cuda::gated_activation(static_cast<int>(source.activation), input, source.up->data(kCuda), x.data(kCuda),
                                   x.numel(), stream_),
            "the gated activation kernel");
    } else if (source.kind == LinearSource::Kind::kActivated) {
      check(cuda::gated_activation(static_cast<int>(source.activation), input, nullptr, x.data(kCuda), x.numel(),
                                   stream_),
            "the activation kernel");
    }
    const auto start = begin_timing();
    const std::uint16_t* input_bf16 = nullptr;
    if (precision == Precision::kBf16) {
      std::uint16_t* rounded = x_bf16_.at_least(static_cast<std::size_t>(x.numel()));
      check(cuda::to_bf16(cuda::Stored::kF32, input, rounded, x.numel(), stream_), "the to bf16 kernel");
      input_bf16 = rounded;
    }
    double flops = 0;
    for (const LinearTarget& target : outputs) {
      const std::int64_t out = target.weight->rows();
      ATTNGEOM_CHECK(target.y->rows() == rows && target.y->cols() == out && target.weight->cols() == cols);
      // Row-major y[rows, out] = x[rows, cols] W^T, W [out, cols]: column-major y^T = W^T' x^T'.
      const float one = 1.0f, zero = 0.0f;
      const void* w = operand(*target.weight, precision == Precision::kBf16 ? DType::kBF16 : DType::kF32);
      if (input_bf16 != nullptr) {
        check(blas().gemm_ex(blas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(out), static_cast<int>(rows),
                             static_cast<int>(cols), &one, w, CUDA_R_16BF, static_cast<int>(cols), input_bf16,
                             CUDA_R_16BF, static_cast<int>(cols), &zero, target.y->data(kCuda), CUDA_R_32F,
                             static_cast<int>(out), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx (a linear layer, bf16)");
      } else {
        check(blas().sgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(out), static_cast<int>(rows),
                           static_cast<int>(cols), &one, static_cast<const float*>(w), static_cast<int>(cols), input,
                           static_cast<int>(cols), &zero, target.y->data(kCuda), static_cast<int>(out)),
              "cublasSgemm (a linear layer)");
      }
      flops += 2.0 * static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(out);
    }
    end_timing(start, flops);
  }

  void add_bias(Buffer& y, const Weight& bias) override {
    use_device();
    const TensorView& view = bias.view(kCuda);
    ATTNGEOM_CHECK(view.numel() == y.cols());
    check(cuda::add_bias(y.data(kCuda), y.rows(), y.cols(), stored_type(view.dtype), view.data, stream_),
          "the add bias kernel");
  }

  void rms_norm(Buffer& y, std::int64_t width, const RmsNormSpec& norm) override {
    use_device();
    ATTNGEOM_CHECK(y.numel() % width == 0);
    norm_rows(y.data(kCuda), y.data(kCuda), y.numel() / width, width, norm);
  }

  void rope(Buffer& x, int heads, int head_dim, const Buffer& table) override {
    use_device();
    const auto rotary_dim = static_cast<int>(table.cols());  // partial rotary: the rest of each head passes
    ATTNGEOM_CHECK(rotary_dim % 2 == 0 && rotary_dim <= head_dim && table.rows() >= x.rows());
    check(
        cuda::rope(x.data(kCuda), static_cast<int>(x.rows()), heads, head_dim, rotary_dim, table.data(kCuda), stream_),
        "the rope kernel");
  }

  void attention(const AttentionCall& call, const AttentionRowSink& sink) override;

  void residual_add(Buffer& x, Buffer& y, const RmsNormSpec* post_norm) override {
    use_device();
    if (post_norm != nullptr) rms_norm(y, y.cols(), *post_norm);
    check(cuda::add_in_place(x.data(kCuda), y.data(kCuda), x.numel(), stream_), "the add in place kernel");
  }

  void soft_cap(Buffer& x, float cap) override {
    use_device();
    check(cuda::soft_cap(x.data(kCuda), x.numel(), cap, stream_), "the soft cap kernel");
  }

  void scale(Buffer& x, float factor) override {
    use_device();
    check(cuda::scale(x.data(kCuda), x.numel(), factor, stream_), "the scale kernel");
  }

  void clamp_symmetric(Buffer& x, float limit) override {
    use_device();
    check(cuda::clamp_symmetric(x.data(kCuda), x.numel(), limit, stream_), "the clamp kernel");
  }

  std::int64_t count_nonfinite(const Buffer& x) override {
    use_device();
    unsigned long long* counter = counter_.at_least(1);
    check(cuda::count_nonfinite(x.data(kCuda), x.numel(), counter, stream_), "the count nonfinite kernel");
    unsigned long long count = 0;
    check(cudaMemcpyAsync(&count, counter, sizeof count, cudaMemcpyDeviceToHost, stream_), "copy to the host");
    synchronize();
    return static_cast<std::int64_t>(count);
  }

  void gather_rows(const Buffer& x, std::span<const int> rows, Buffer& out) override {
    use_device();
    ATTNGEOM_CHECK(out.cols() == x.cols() && static_cast<std::int64_t>(rows.size()) <= out.rows());
    for (const int row : rows) ATTNGEOM_CHECK(row >= 0 && row < x.rows());
    check(cuda::gather_rows(x.data(kCuda), x.cols(), ints_.upload(rows, stream_), static_cast<int>(rows.size()),
                            out.data(kCuda), stream_),
          "the gather rows kernel");
  }

  void scatter_add_rows(Buffer& x, std::span<const int> rows, const Buffer& y,
                        std::span<const float> weights) override {
    use_device();
    ATTNGEOM_CHECK(y.cols() == x.cols() && static_cast<std::int64_t>(rows.size()) <= y.rows() &&
                   weights.size() == rows.size());
    check_distinct_rows(rows, x.rows());  // one thread per element of x: no two may meet
    check(cuda::scatter_add_rows(x.data(kCuda), x.cols(), ints_.upload(rows, stream_), static_cast<int>(rows.size()),
                                 y.data(kCuda), row_weights_.upload(weights, stream_), stream_),
          "the scatter add rows kernel");
  }

  void copy_to_host(const Buffer& x, std::span<float> out) override {
    use_device();
    ATTNGEOM_CHECK(out.size() == static_cast<std::size_t>(x.numel()));
    check(cudaMemcpyAsync(out.data(), x.data(kCuda), out.size_bytes(), cudaMemcpyDeviceToHost, stream_),
          "copy to the host");
    synchronize();
  }

  void heads_to_host(const Buffer& x, int heads, int head_dim, std::span<float> out) override {
    use_device();
    ATTNGEOM_CHECK(x.cols() == static_cast<std::int64_t>(heads) * head_dim &&
                   out.size() == static_cast<std::size_t>(x.numel()));
    float* staged = staging_.at_least(out.size());
    check(cuda::heads_major(x.data(kCuda), static_cast<int>(x.rows()), heads, head_dim, staged, stream_),
          "the heads major kernel");
    check(cudaMemcpyAsync(out.data(), staged, out.size_bytes(), cudaMemcpyDeviceToHost, stream_), "copy to the host");
    synchronize();
  }

  HostFloats host_floats(std::size_t count) override {
    use_device();
    void* memory = nullptr;
    check(cudaMallocHost(&memory, std::max<std::size_t>(count, 1) * sizeof(float)), "cudaMallocHost");
    std::memset(memory, 0, count * sizeof(float));
    return {static_cast<float*>(memory), count, [](float* m) { cudaFreeHost(m); }};
  }

  void synchronize() override {
    use_device();
    check(cudaStreamSynchronize(stream_), "a kernel or product on the GPU");
  }

 private:
  using Clock = std::chrono::steady_clock;

  void norm_rows(const float* x, float* out, std::int64_t rows, std::int64_t width, const RmsNormSpec& norm) {
    const TensorView& weight = norm.weight->view(kCuda);
    ATTNGEOM_CHECK(weight.numel() == width);
    cuda::NormSpec spec;
    spec.weight_type = stored_type(weight.dtype);
    spec.weight = weight.data;
    if (norm.bias != nullptr && norm.bias->present()) {
      const TensorView& bias = norm.bias->view(kCuda);
      ATTNGEOM_CHECK(bias.numel() == width);
      spec.bias_type = stored_type(bias.dtype);
      spec.bias = bias.data;
    }
    spec.offset = norm.offset;
    spec.eps = norm.eps;
    spec.centered = norm.centered;
    check(cuda::rms_norm(x, out, rows, width, spec, stream_),
          norm.centered ? "the layer norm kernel" : "the rms norm kernel");
  }

  // The weight in the dtype the products read (`wanted`): as stored where the dtypes agree,
  // else a converted copy made on first use and kept.
  const void* operand(const Weight& weight, DType wanted) {
    const TensorView& view = weight.view(kCuda);
    if (view.dtype == wanted) return view.data;
    auto found = operands_.find({view.data, wanted});
    if (found != operands_.end()) return found->second.get();
    void* memory = nullptr;
    check(cudaMalloc(&memory, static_cast<std::size_t>(view.numel()) * dtype_size(wanted)),
          "cudaMalloc (weights converted for the products)");
    std::unique_ptr<void, DeviceFree> owned(memory);
    if (wanted == DType::kBF16) {
      check(
          cuda::to_bf16(stored_type(view.dtype), view.data, static_cast<std::uint16_t*>(memory), view.numel(), stream_),
          "the to bf16 kernel");
    } else {
      check(cuda::widen(stored_type(view.dtype), view.data, static_cast<float*>(memory), view.numel(), stream_),
            "the widen kernel");
    }
    return operands_.emplace(std::pair{view.data, wanted}, std::move(owned)).first->second.get();
  }

  Clock::time_point begin_timing() {
    if (timings_ != nullptr) synchronize();
    return Clock::now();
  }
  void end_timing(Clock::time_point start, double flops) {
    if (timings_ == nullptr) return;
    synchronize();
    timings_->seconds += std::chrono::duration<double>(Clock::now() - start).count();
    timings_->flops += flops;
  }

  // Every op first makes this GPU current on the calling thread (a no-op when it is).
  void use_device() const { check(cudaSetDevice(device_), "cudaSetDevice"); }

  int device_;
  Precision precision_;
  LinearTimings* timings_;
  std::size_t score_bytes_;
  bool fused_attention_;
  std::size_t shared_limit_ = 0;  // bytes of shared memory a kernel's block may ask for
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::vector<std::unique_ptr<void, DeviceFree>> weights_;
  std::map<std::pair<const void*, DType>, std::unique_ptr<void, DeviceFree>> operands_;  // (stored, wanted)
  Scratch<float> normed_, staging_, scores_, captured_;
  Scratch<float, HostFree> captured_host_;
  Scratch<std::uint16_t> x_bf16_, q_bf16_, k_bf16_, v_bf16_, probs_bf16_;
  Scratch<int> ints_, topn_, capture_index_, capture_queries_;
  Scratch<std::uint16_t> gathered_q_bf16_;
  Scratch<float> gates_, row_weights_, alibi_slopes_;
  Scratch<unsigned long long> counter_;
};

void CudaBackend::attention(const AttentionCall& call, const AttentionRowSink& sink) {
  use_device();
  const AttentionShape& s = call.shape;
  ATTNGEOM_CHECK(s.heads % s.kv_heads == 0);
  ATTNGEOM_CHECK(std::is_sorted(call.capture_rows.begin(), call.capture_rows.end()));
  ATTNGEOM_CHECK(call.head_topn.empty() || call.head_topn.size() == static_cast<std::size_t>(s.heads));
  const bool capturing = !call.capture_rows.empty() && sink;
  const std::size_t captured_rows = capturing ? call.capture_rows.size() : 0;
  const int block_heads = capturing ? capture_block_heads(s, captured_rows) : s.heads;
  const std::size_t seq = static_cast<std::size_t>(s.seq);
  const int* topn = call.head_topn.empty() ? nullptr : topn_.upload(call.head_topn, stream_);
  const float* slopes = s.alibi_slopes.empty() ? nullptr : alibi_slopes_.upload(s.alibi_slopes, stream_);
  const int* capture_index = nullptr;
  if (capturing) {
    std::vector<int> index(seq, -1);
    for (std::size_t c = 0; c < captured_rows; ++c) {  // strictly increasing, inside the sequence
      ATTNGEOM_CHECK(call.capture_rows[c] >= 0 && call.capture_rows[c] < s.seq);
      ATTNGEOM_CHECK(c == 0 || call.capture_rows[c] > call.capture_rows[c - 1]);
    }
    for (std::size_t c = 0; c < captured_rows; ++c)
      index[static_cast<std::size_t>(call.capture_rows[c])] = static_cast<int>(c);
    capture_index = capture_index_.upload(std::span<const int>(index), stream_);
  }
  const bool bf16 = precision_ == Precision::kBf16;
  if (bf16) {
    check(cuda::to_bf16(cuda::Stored::kF32, call.q->data(kCuda),
                        q_bf16_.at_least(static_cast<std::size_t>(call.q->numel())), call.q->numel(), stream_),
          "the to bf16 kernel");
    check(cuda::to_bf16(cuda::Stored::kF32, call.k->data(kCuda),
                        k_bf16_.at_least(static_cast<std::size_t>(call.k->numel())), call.k->numel(), stream_),
          "the to bf16 kernel");
    check(cuda::to_bf16(cuda::Stored::kF32, call.v->data(kCuda),
                        v_bf16_.at_least(static_cast<std::size_t>(call.v->numel())), call.v->numel(), stream_),
          "the to bf16 kernel");
  }
  // In bf16 without top-N, every row's output comes from the fused kernel, and the blocks
  // below only take the captured rows' probabilities, from their gathered queries.
  const bool fused =
      bf16 && fused_attention_ && !topn && fused_attention_fits(s.head_dim, shared_limit_, captured_rows, s.seq);
  const std::uint16_t* q_rows = bf16 ? q_bf16_.data() : nullptr;
  const int* queries = nullptr;
  if (fused) {
    const cuda::FusedAttention all{q_bf16_.data(),
                                   k_bf16_.data(),
                                   v_bf16_.data(),
                                   call.out->data(kCuda),
                                   s.seq,
                                   s.heads,
                                   s.kv_heads,
                                   s.head_dim,
                                   s.window,
                                   s.scale,
                                   s.softcap,
                                   slopes,
                                   s.alibi_before_scale};
    check(cuda::fused_attention(all, stream_), "the fused attention kernel");
    if (capturing) {
      // The captured rows of the bf16 queries, moved as 32-bit words (two bf16 each: head_dim is even).
      const std::int64_t words = static_cast<std::int64_t>(s.heads) * s.head_dim / 2;
      queries = capture_queries_.upload(call.capture_rows, stream_);
      std::uint16_t* gathered = gathered_q_bf16_.at_least(captured_rows * static_cast<std::size_t>(words) * 2);
      check(cuda::gather_rows(reinterpret_cast<const float*>(q_bf16_.data()), words, queries,
                              static_cast<int>(captured_rows), reinterpret_cast<float*>(gathered), stream_),
            "the gather rows kernel");
      q_rows = gathered;
    }
  }
  const std::uint16_t* k_rows = bf16 ? k_bf16_.data() : nullptr;
  const std::uint16_t* v_rows = bf16 ? v_bf16_.data() : nullptr;
  // The blocks' query rows: every row, or (fused) the captured rows, queries[r] for r < row_count.
  const int row_count = fused ? static_cast<int>(captured_rows) : s.seq;
  const auto query_of = [&](int r) { return fused ? call.capture_rows[static_cast<std::size_t>(r)] : r; };
  const std::size_t block_rows = score_block_rows(score_bytes_, static_cast<std::size_t>(block_heads), seq);
  const std::size_t block_scores = static_cast<std::size_t>(block_heads) * block_rows * seq;
  float* scores = row_count > 0 ? scores_.at_least(block_scores) : nullptr;
  std::uint16_t* probs_bf16 = bf16 && !fused ? probs_bf16_.at_least(block_scores) : nullptr;
  const std::size_t head_rows = captured_rows * seq;  // [rows, seq] per head

  for (int begin = 0; begin < s.heads; begin += block_heads) {
    const int end = std::min(begin + block_heads, s.heads);
    float* captured = capturing ? captured_.at_least(static_cast<std::size_t>(block_heads) * head_rows) : nullptr;
    for (int r0 = 0; r0 < row_count; r0 += static_cast<int>(block_rows)) {
      const int rows = std::min(static_cast<int>(block_rows), row_count - r0);
      const int key0 = first_visible_key(s, query_of(r0));
      const int keys = query_of(r0 + rows - 1) + 1 - key0;
      const AttentionBlock query_block{begin, r0, rows, key0, keys};  // head: the first of end - begin
      cuda::score_products(blas_, call, query_block, end - begin, q_rows, k_rows, scores);
      cuda::SoftmaxBlock block;
      block.scores = scores;
      block.heads = end - begin;
      block.head_begin = begin;
      block.rows = rows;
      block.keys = keys;
      block.r0 = r0;
      block.key0 = key0;
      block.window = s.window;
      block.softcap = s.softcap;
      block.alibi_slopes = slopes;
      block.alibi_before_scale = s.alibi_before_scale;
      block.scale = s.scale;
      block.topn = topn;
      block.capture_index = capture_index;
      block.captured = captured;
      block.captured_rows = static_cast<int>(captured_rows);
      block.seq = s.seq;
      block.queries = fused ? queries + r0 : nullptr;
      block.probs_bf16 = probs_bf16;
      check(cuda::attention_softmax(block, stream_), "the attention softmax kernel");
      if (!fused) cuda::weighted_sums(blas_, call, query_block, end - begin, scores, probs_bf16, v_rows);
    }
    if (capturing) {
      const std::size_t count = static_cast<std::size_t>(end - begin) * head_rows;
      float* host = captured_host_.at_least(count);
      check(cudaMemcpyAsync(host, captured, count * sizeof(float), cudaMemcpyDeviceToHost, stream_),
            "copy of the captured rows to the host");
      synchronize();
      sink(AttentionRows{begin, end, call.capture_rows, s.seq, host, MemorySpace::kHost});
    }
  }
  if (!call.head_gates.empty()) {
    check(cuda::scale_heads(call.out->data(kCuda), s.seq, s.heads, s.head_dim, gates_.upload(call.head_gates, stream_),
                            stream_),
          "the scale heads kernel");
  }
  if (timings_ != nullptr) synchronize();  // the caller times the whole call
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const CudaOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

}  // namespace attngeom
