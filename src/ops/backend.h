#pragma once
// The compute seam under the forward pass: buffers and weights that live in one memory space,
// and the ops of a transformer block on them. model/forward.cc is written once against this
// interface; each kind of hardware brings its own kernels (ops/cpu_backend.h is the CPU's).
// No library type appears here, and no raw pointer crosses it: a buffer's or a weight's
// memory is reached only through its memory space, which the backend of that space checks.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "ops/attention_shape.h"
#include "ops/elementwise.h"
#include "ops/gemm.h"
#include "ops/tensor_view.h"

namespace attngeom {

enum class MemorySpace { kHost, kCuda };

// An fp32 activation tensor [rows, cols], row-major, allocated by a backend in its memory space.
class Buffer {
 public:
  using Release = void (*)(float*);
  Buffer() = default;
  Buffer(MemorySpace space, std::int64_t rows, std::int64_t cols, float* memory, Release release);
  MemorySpace space() const { return space_; }
  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  std::int64_t numel() const { return rows_ * cols_; }
  // The elements, for the backend of `space` only (checked).
  float* data(MemorySpace space);
  const float* data(MemorySpace space) const;
  // Rows [0, rows) of this buffer, sharing its memory and valid while it lives: a smaller batch
  // (the tokens routed to one expert) in a buffer allocated once for the largest.
  Buffer leading_rows(std::int64_t rows);

 private:
  MemorySpace space_ = MemorySpace::kHost;
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  std::unique_ptr<float, Release> memory_{nullptr, nullptr};
};

// Floats in host memory that a backend allocated (Backend::host_floats), zero-filled.
class HostFloats {
 public:
  using Release = void (*)(float*);
  HostFloats() = default;
  HostFloats(float* memory, std::size_t size, Release release) : memory_(memory, release), size_(size) {}
  float* data() { return memory_.get(); }
  const float* data() const { return memory_.get(); }
  std::size_t size() const { return size_; }
  std::span<float> span() { return {memory_.get(), size_}; }

 private:
  std::unique_ptr<float, Release> memory_{nullptr, nullptr};
  std::size_t size_ = 0;
};

// A checkpoint tensor [rows, cols] in its stored dtype, as a backend holds it (Backend::upload);
// an absent tensor is empty. Copies share the backend's memory.
class Weight {
 public:
  Weight() = default;
  Weight(MemorySpace space, const TensorView& view) : space_(space), view_(view) {}
  bool present() const { return view_.data != nullptr; }
  DType dtype() const { return view_.dtype; }
  std::int64_t rows() const { return view_.rows; }
  std::int64_t cols() const { return view_.cols; }
  // The stored tensor, for the backend of `space` only (checked).
  const TensorView& view(MemorySpace space) const;

 private:
  MemorySpace space_ = MemorySpace::kHost;
  TensorView view_;
};

// A norm over each run of a row: HF LlamaRMSNorm / GemmaRMSNorm, x / sqrt(mean(x^2) + eps) *
// (offset + weight); or, with `centered`, HF nn.LayerNorm, (x - mean(x)) / sqrt(var(x) + eps) *
// weight + bias (biased variance; offset unused; bias may be absent).
struct RmsNormSpec {
  const Weight* weight = nullptr;
  float offset = 0;
  float eps = 0;
  bool centered = false;         // LayerNorm (GPT-NeoX, GPT-2, Phi)
  const Weight* bias = nullptr;  // LayerNorm's bias [1, width]; null or absent: none
};

// The input x [rows, cols] of linear products: a buffer as it is, its norm (RmsNormSpec), the
// gated activation act(gate) * up, or the plain activation act(x) of a non-gated MLP. A
// backend may produce a normed, gated or activated input block by block on its way into the
// products (the CPU's bf16 path never writes it whole).
struct LinearSource {
  enum class Kind { kStored, kNormed, kGated, kActivated };
  Kind kind = Kind::kStored;
  Buffer* x = nullptr;         // kGated: the gate; kGated, kActivated: the backend may overwrite x with the result
  RmsNormSpec norm;            // kNormed
  const Buffer* up = nullptr;  // kGated
  Activation activation = Activation::kSilu;  // kGated, kActivated
};
LinearSource stored(Buffer& x);
LinearSource normed(Buffer& x, const RmsNormSpec& norm);
LinearSource gated(Buffer& gate, const Buffer& up, Activation activation);
LinearSource activated(Buffer& x, Activation activation);

// One product of a shared input: y[rows, weight.rows] = x[rows, weight.cols] * weight^T.
struct LinearTarget {
  const Weight* weight;
  Buffer* y;
};

// One layer's attention. q [seq, heads*head_dim], k, v [seq, kv_heads*head_dim] (q, k rotated)
// -> out [seq, heads*head_dim]. Optional edits with no HF counterpart (docs/method.md
// section 7): head_gates [heads] scale each head's output (0 removes it); head_topn [heads]
// keeps each query's top-N keys (0: all). capture_rows: ascending query positions whose
// probabilities are handed out.
struct AttentionCall {
  AttentionShape shape;
  const Buffer* q = nullptr;
  const Buffer* k = nullptr;
  const Buffer* v = nullptr;
  Buffer* out = nullptr;
  std::span<const float> head_gates;
  std::span<const int> head_topn;
  std::span<const int> capture_rows;
};

// Captured probabilities of heads [head_begin, head_end): probs [heads, rows, seq] for the
// query positions `positions` [rows], exact zeros outside each row's visible keys.
struct AttentionRows {
  int head_begin = 0;
  int head_end = 0;
  std::span<const int> positions;
  int seq = 0;
  const float* probs = nullptr;
  MemorySpace space = MemorySpace::kHost;
  int heads() const { return head_end - head_begin; }
  const float* head_rows(int head) const {  // [rows, seq]
    return probs + static_cast<std::size_t>(head - head_begin) * positions.size() * static_cast<std::size_t>(seq);
  }
};
// Called once per block of heads, from the thread that called Backend::attention, in head
// order; the block is valid until it returns.
using AttentionRowSink = std::function<void(const AttentionRows& rows)>;

// Throws unless every row is in [0, limit) and none repeats (scatter_add_rows).
void check_distinct_rows(std::span<const int> rows, std::int64_t limit);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual MemorySpace space() const = 0;
  virtual Precision precision() const = 0;
  // The matmul kernel, recorded in outputs: onednn-sgemm, onednn-bf16x3 or onednn-bf16.
  virtual std::string_view kernel() const = 0;

  // Zero-filled [rows, cols].
  virtual Buffer allocate(std::int64_t rows, std::int64_t cols) = 0;
  // x = 0, in place.
  virtual void fill_zero(Buffer& x) = 0;
  // A checkpoint tensor as this backend reads it; an absent one stays absent.
  virtual Weight upload(const TensorView& stored) = 0;
  // RoPE cos and sin of positions 0..seq-1, each times `scale` (HF longrope's attention_scaling,
  // else 1) (ops/elementwise.h make_rope_table): [seq, 2 * half].
  virtual Buffer rope_table(int seq, std::span<const double> inv_freq, double scale) = 0;

  // x[i] = table[tokens[i]] * scale                                   x: [tokens, cols]
  virtual void embed(std::span<const int> tokens, const Weight& table, float scale, Buffer& x) = 0;
  // Every product of one input (q, k, v; gate, up), each as if computed alone.
  virtual void linear(const LinearSource& x, std::span<const LinearTarget> outputs) = 0;
  // As linear, in fp32 whatever precision() is: the exact product a fast path's discrete
  // choice is checked against (a router's experts).
  virtual void linear_fp32(const LinearSource& x, std::span<const LinearTarget> outputs) = 0;
  // y[r, j] += bias[j]
  virtual void add_bias(Buffer& y, const Weight& bias) = 0;
  // In place, over each run of `width` elements of y (a head, or a whole row): RMSNorm, or
  // LayerNorm when norm.centered (then width is a whole row and the bias, if any, [1, width]).
  virtual void rms_norm(Buffer& y, std::int64_t width, const RmsNormSpec& norm) = 0;
  // In place on x [seq, heads*head_dim], HF rotate_half with `table` (rope_table) over the
  // first table.cols() (rotary_dim, even, <= head_dim) elements of each head; the rest pass
  // through unchanged (partial rotary, GPT-NeoX / Phi). rotary_dim == head_dim: full RoPE.
  virtual void rope(Buffer& x, int heads, int head_dim, const Buffer& table) = 0;
  virtual void attention(const AttentionCall& call, const AttentionRowSink& sink) = 0;
  // x += y, or x += norm(y) with a post-norm (y is then normed in place). Also the sum of two
  // branches, x = mlp + attn, before the residual (GPT-NeoX's parallel residual).
  virtual void residual_add(Buffer& x, Buffer& y, const RmsNormSpec* post_norm) = 0;
  // In place: x = cap * tanh(x / cap).
  virtual void soft_cap(Buffer& x, float cap) = 0;
  // In place: x = x * factor.
  virtual void scale(Buffer& x, float factor) = 0;
  // In place: x = min(max(x, -limit), limit).
  virtual void clamp_symmetric(Buffer& x, float limit) = 0;
  // How many elements of x are NaN or infinite.
  virtual std::int64_t count_nonfinite(const Buffer& x) = 0;
  // out[i] = x[rows[i]]                                               out: [rows, x.cols]
  virtual void gather_rows(const Buffer& x, std::span<const int> rows, Buffer& out) = 0;
  // x[rows[i]] += weights[i] * y[i], rows distinct (a mixture of experts' weighted expert
  // outputs, HF index_add_)                                           y: [rows, x.cols]
  virtual void scatter_add_rows(Buffer& x, std::span<const int> rows, const Buffer& y,
                                std::span<const float> weights) = 0;
  // out = x, on the host.
  virtual void copy_to_host(const Buffer& x, std::span<float> out) = 0;
  // x [seq, heads*head_dim] -> out [heads, seq, head_dim] on the host.
  virtual void heads_to_host(const Buffer& x, int heads, int head_dim, std::span<float> out) = 0;
  // Host memory of `count` floats, zero-filled, into which copies to the host (copy_to_host,
  // heads_to_host) go fastest: page-locked on a GPU, whose DMA then reads it directly.
  virtual HostFloats host_floats(std::size_t count);
  // Returns once every op called so far is done (a device's ops run asynchronously).
  virtual void synchronize() = 0;
};

}  // namespace attngeom
