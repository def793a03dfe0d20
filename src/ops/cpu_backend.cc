#include "ops/cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "ops/attention.h"
#include "ops/elementwise.h"
#include "util/error.h"
#include "util/half.h"

namespace attngeom {
namespace {

constexpr MemorySpace kHost = MemorySpace::kHost;

// A norm weight or bias [n] in fp32, owned by the caller for as long as it uses it.
std::vector<float> widened(const Weight& weight) {
  const TensorView& view = weight.view(kHost);
  std::vector<float> out(static_cast<std::size_t>(view.numel()));
  widen_to_f32(view.dtype, view.data, out.data(), out.size());
  return out;
}

// A norm's weight and optional bias in fp32, and the norm of rows [begin, end) of x into out.
struct HostNorm {
  RmsNormSpec spec;
  std::vector<float> weight;
  std::vector<float> bias;  // empty: none

  explicit HostNorm(const RmsNormSpec& norm) : spec(norm), weight(widened(*norm.weight)) {
    if (norm.bias != nullptr && norm.bias->present()) bias = widened(*norm.bias);
  }
  void apply(const float* x, std::int64_t rows, std::int64_t width, float* out) const {
    ATTNGEOM_CHECK(static_cast<std::int64_t>(weight.size()) == width);
    if (spec.centered) {
      layer_norm(x, rows, width, weight.data(), bias.empty() ? nullptr : bias.data(), spec.eps, out);
    } else {
      rms_norm(x, rows, width, weight.data(), spec.offset, spec.eps, out);
    }
  }
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(std::unique_ptr<LinearBackend> linear) : linear_(std::move(linear)) {}

  MemorySpace space() const override { return kHost; }
  Precision precision() const override { return linear_->precision(); }
  std::string_view kernel() const override { return linear_->kernel(); }

  Buffer allocate(std::int64_t rows, std::int64_t cols) override {
    return Buffer(kHost, rows, cols, new float[static_cast<std::size_t>(rows * cols)](),
                  [](float* memory) { delete[] memory; });
  }

  Weight upload(const TensorView& stored) override { return Weight(kHost, stored); }

  Buffer rope_table(int seq, std::span<const double> inv_freq, double scale) override {
    Buffer table = allocate(seq, 2 * static_cast<std::int64_t>(inv_freq.size()));
    make_rope_table(seq, inv_freq, scale, table.data(kHost));
    return table;
  }

  void embed(std::span<const int> tokens, const Weight& table, float scale, Buffer& x) override {
    const TensorView& view = table.view(kHost);
    const std::int64_t cols = x.cols();
    ATTNGEOM_CHECK(view.cols == cols && static_cast<std::int64_t>(tokens.size()) <= x.rows());
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      ATTNGEOM_CHECK(tokens[i] >= 0 && tokens[i] < view.rows);
      float* row = x.data(kHost) + static_cast<std::int64_t>(i) * cols;
      widen_to_f32(view.dtype, view.row(tokens[i]), row, static_cast<std::size_t>(cols));
      if (scale != 1.0f) {
        for (std::int64_t j = 0; j < cols; ++j) row[j] *= scale;
      }
    }
  }

  void linear(const LinearSource& source, std::span<const LinearTarget> outputs) override {
    products(source, outputs, *linear_);
  }

  void linear_fp32(const LinearSource& source, std::span<const LinearTarget> outputs) override {
    if (linear_->precision() == Precision::kFp32) return products(source, outputs, *linear_);
    if (exact_ == nullptr) exact_ = make_fp32_backend();
    products(source, outputs, *exact_);
  }

  void fill_zero(Buffer& x) override { std::fill_n(x.data(kHost), x.numel(), 0.0f); }

  void add_bias(Buffer& y, const Weight& bias) override {
    const std::vector<float> values = widened(bias);
    ATTNGEOM_CHECK(static_cast<std::int64_t>(values.size()) == y.cols());
    attngeom::add_bias(y.data(kHost), y.rows(), y.cols(), values.data());
  }

  void rms_norm(Buffer& y, std::int64_t width, const RmsNormSpec& norm) override {
    ATTNGEOM_CHECK(y.numel() % width == 0);
    float* data = y.data(kHost);
    HostNorm(norm).apply(data, y.numel() / width, width, data);
  }

  void rope(Buffer& x, int heads, int head_dim, const Buffer& table) override {
    const auto rotary_dim = static_cast<int>(table.cols());
    ATTNGEOM_CHECK(rotary_dim % 2 == 0 && rotary_dim <= head_dim && table.rows() >= x.rows());
    apply_rope(x.data(kHost), static_cast<int>(x.rows()), heads, head_dim, rotary_dim, table.data(kHost));
  }

  void attention(const AttentionCall& call, const AttentionRowSink& sink) override {
    causal_attention(call.shape, call.q->data(kHost), call.k->data(kHost), call.v->data(kHost), call.out->data(kHost),
                     call.capture_rows, sink, call.head_gates, attention_, call.head_topn, precision());
  }

  void residual_add(Buffer& x, Buffer& y, const RmsNormSpec* post_norm) override {
    if (post_norm != nullptr) rms_norm(y, y.cols(), *post_norm);
    add_in_place(x.data(kHost), y.data(kHost), x.numel());
  }

  void soft_cap(Buffer& x, float cap) override { attngeom::soft_cap(x.data(kHost), x.numel(), cap); }
  void scale(Buffer& x, float factor) override { scale_in_place(x.data(kHost), x.numel(), factor); }
  void clamp_symmetric(Buffer& x, float limit) override { attngeom::clamp_symmetric(x.data(kHost), x.numel(), limit); }

  std::int64_t count_nonfinite(const Buffer& x) override {
    return static_cast<std::int64_t>(
        attngeom::count_nonfinite(DType::kF32, x.data(kHost), static_cast<std::size_t>(x.numel())).count);
  }

  void gather_rows(const Buffer& x, std::span<const int> rows, Buffer& out) override {
    const std::int64_t cols = x.cols();
    ATTNGEOM_CHECK(out.cols() == cols && static_cast<std::int64_t>(rows.size()) <= out.rows());
    for (std::size_t r = 0; r < rows.size(); ++r) {
      ATTNGEOM_CHECK(rows[r] >= 0 && rows[r] < x.rows());
      std::copy_n(x.data(kHost) + rows[r] * cols, cols, out.data(kHost) + static_cast<std::int64_t>(r) * cols);
    }
  }

  void scatter_add_rows(Buffer& x, std::span<const int> rows, const Buffer& y,
                        std::span<const float> weights) override {
    const std::int64_t cols = x.cols();
    ATTNGEOM_CHECK(y.cols() == cols && static_cast<std::int64_t>(rows.size()) <= y.rows() &&
                   weights.size() == rows.size());
    check_distinct_rows(rows, x.rows());
    for (std::size_t r = 0; r < rows.size(); ++r) {
      float* out = x.data(kHost) + static_cast<std::int64_t>(rows[r]) * cols;
      const float* in = y.data(kHost) + static_cast<std::int64_t>(r) * cols;
      for (std::int64_t j = 0; j < cols; ++j) {
        const float weighted = weights[r] * in[j];
        out[j] += weighted;
      }
    }
  }

  void copy_to_host(const Buffer& x, std::span<float> out) override {
    ATTNGEOM_CHECK(out.size() == static_cast<std::size_t>(x.numel()));
    std::memcpy(out.data(), x.data(kHost), out.size() * sizeof(float));
  }

  void heads_to_host(const Buffer& x, int heads, int head_dim, std::span<float> out) override {
    const auto seq = static_cast<int>(x.rows());
    ATTNGEOM_CHECK(x.cols() == static_cast<std::int64_t>(heads) * head_dim &&
                   out.size() == static_cast<std::size_t>(x.numel()));
    const float* in = x.data(kHost);
    // A strided copy of T x heads*head_dim floats: on every thread, as the products are.
#pragma omp parallel for schedule(static)
    for (int g = 0; g < heads; ++g) {
      for (int i = 0; i < seq; ++i) {
        std::copy_n(in + (static_cast<std::size_t>(i) * heads + g) * head_dim, head_dim,
                    out.data() + (static_cast<std::size_t>(g) * seq + i) * head_dim);
      }
    }
  }

  void synchronize() override {}  // every op is done when it returns

 private:
  // The products of `source` by `linear`, the input normed or activated block by block.
  void products(const LinearSource& source, std::span<const LinearTarget> outputs, LinearBackend& linear) {
    Buffer& x = *source.x;
    float* xs = x.data(kHost);
    const std::int64_t cols = x.cols();
    std::optional<HostNorm> norm;  // outlives the products that read it
    LinearInput input{x.rows(), cols, xs, {}, nullptr};
    if (source.kind == LinearSource::Kind::kNormed) {
      norm.emplace(source.norm);
      if (normed_.size() < static_cast<std::size_t>(x.numel())) normed_.resize(static_cast<std::size_t>(x.numel()));
      input = {x.rows(), cols, nullptr,
               [xs, cols, &norm](std::int64_t begin, std::int64_t end, float* out) {
                 norm->apply(xs + begin * cols, end - begin, cols, out);
               },
               normed_.data()};
    } else if (source.kind == LinearSource::Kind::kGated) {
      const float* up = source.up->data(kHost);
      const Activation activation = source.activation;
      input = {x.rows(), cols, nullptr,
               [xs, up, cols, activation](std::int64_t begin, std::int64_t end, float* out) {
                 gated_activation(activation, xs + begin * cols, up + begin * cols, out, (end - begin) * cols);
               },
               xs};
    } else if (source.kind == LinearSource::Kind::kActivated) {
      const Activation act = source.activation;
      input = {x.rows(), cols, nullptr,
               [xs, cols, act](std::int64_t begin, std::int64_t end, float* out) {
                 activation(act, xs + begin * cols, out, (end - begin) * cols);
               },
               xs};
    }
    std::vector<LinearOutput> products;
    products.reserve(outputs.size());
    for (const LinearTarget& target : outputs) {
      ATTNGEOM_CHECK(target.y->rows() == x.rows() && target.y->cols() == target.weight->rows());
      products.push_back({&target.weight->view(kHost), target.y->data(kHost)});
    }
    linear.linear_products(input, products);
  }

  std::unique_ptr<LinearBackend> linear_;
  std::unique_ptr<LinearBackend> exact_;  // fp32 products beside a faster precision (linear_fp32)
  std::vector<float> normed_;             // a normed input, where a backend that multiplies in fp32 writes it whole
  AttentionScratch attention_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(std::unique_ptr<LinearBackend> linear) {
  return std::make_unique<CpuBackend>(std::move(linear));
}

}  // namespace attngeom
