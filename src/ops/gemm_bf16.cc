// The bf16 fast path: activations rounded to bf16, weights used in place when stored as
// bf16 (their [out, in] layout read as a transposed view, no copy), fp32 accumulation
// and fp32 output through oneDNN matmul, which runs on AMX where the CPU has it.
#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "ops/gemm.h"
#include "util/error.h"

namespace attngeom {
namespace {

using dnnl::memory;

class Bf16Backend final : public LinearBackend {
 public:
  Bf16Backend() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

  Precision precision() const override { return Precision::kBf16; }

  void linear(const float* x, std::int64_t rows, const TensorView& w, float* y) override {
    const std::int64_t in = w.cols;
    x_bf16_.resize(static_cast<std::size_t>(rows * in));  // [rows, in]
    round_to_bf16(x, x_bf16_.data(), rows * in);
    if (w.dtype == DType::kBF16) {
      multiply(rows, in, w.rows, x_bf16_.data(), w.data, y, w.rows);
      return;
    }
    // F32/F16 weights: round a block of output rows at a time into bf16 scratch.
    const std::int64_t block_rows = std::max<std::int64_t>(1, kConvertBlockElems / in);
    w_bf16_.resize(static_cast<std::size_t>(std::min(block_rows, w.rows) * in));
    std::vector<float> widened(static_cast<std::size_t>(std::min(block_rows, w.rows) * in));
    for (std::int64_t r0 = 0; r0 < w.rows; r0 += block_rows) {
      const std::int64_t nr = std::min(block_rows, w.rows - r0);
      widen_to_f32(w.dtype, w.row(r0), widened.data(), static_cast<std::size_t>(nr * in));
      round_to_bf16(widened.data(), w_bf16_.data(), nr * in);
      multiply(rows, in, nr, x_bf16_.data(), w_bf16_.data(), y + r0, w.rows);
    }
  }

 private:
  static constexpr std::int64_t kConvertBlockElems = 1 << 22;

  static void round_to_bf16(const float* src, std::uint16_t* dst, std::int64_t count) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < count; ++i) dst[i] = f32_to_bf16(src[i]);
  }

  // y[rows, out] (row stride ldy) = x[rows, in] * w^T, with w stored [out, in] in bf16.
  void multiply(std::int64_t rows, std::int64_t in, std::int64_t out, const std::uint16_t* x, const void* w, float* y,
                std::int64_t ldy) {
    const auto key = std::make_tuple(rows, in, out, ldy);
    auto it = primitives_.find(key);
    if (it == primitives_.end()) {
      const memory::desc src({rows, in}, memory::data_type::bf16, memory::format_tag::ab);
      const memory::desc wei({in, out}, memory::data_type::bf16, memory::format_tag::ba);  // [out, in] as W^T
      const memory::desc dst({rows, out}, memory::data_type::f32, memory::dims{ldy, 1});
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine_);
      it = primitives_.emplace(key, Entry{dnnl::matmul(pd), src, wei, dst}).first;
    }
    Entry& e = it->second;
    memory src_mem(e.src, engine_, const_cast<std::uint16_t*>(x));
    memory wei_mem(e.wei, engine_, const_cast<void*>(w));  // read-only use of the mmapped weights
    memory dst_mem(e.dst, engine_, y);
    e.matmul.execute(stream_, {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, wei_mem}, {DNNL_ARG_DST, dst_mem}});
    stream_.wait();
  }

  struct Entry {
    dnnl::matmul matmul;
    memory::desc src, wei, dst;
  };
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, Entry> primitives_;
  std::vector<std::uint16_t> x_bf16_;
  std::vector<std::uint16_t> w_bf16_;
};

}  // namespace

bool cpu_has_amx() { return dnnl::get_effective_cpu_isa() == dnnl::cpu_isa::avx512_core_amx; }

std::unique_ptr<LinearBackend> make_bf16_backend() { return std::make_unique<Bf16Backend>(); }

std::unique_ptr<LinearBackend> make_backend(Precision precision) {
  return precision == Precision::kBf16 ? make_bf16_backend() : make_fp32_backend();
}

}  // namespace attngeom
