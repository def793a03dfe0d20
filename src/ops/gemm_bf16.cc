// The bf16 fast path: activations rounded to bf16, weights used in place when stored as
// bf16 (their [out, in] layout read as a transposed view, no copy), fp32 accumulation
// and fp32 output through oneDNN matmul, which runs on AMX where the CPU has it.
#include <algorithm>
#include <vector>

#include "ops/bf16_matmul.h"
#include "ops/gemm.h"
#include "util/error.h"
#include "util/machine.h"

namespace attngeom {
namespace {

class Bf16Backend final : public LinearBackend {
 public:
  Precision precision() const override { return Precision::kBf16; }
  std::string_view kernel() const override { return "onednn-bf16"; }

  void linear_products(const LinearInput& x, std::span<const LinearOutput> outputs) override {
    x_bf16_.resize(static_cast<std::size_t>(x.rows * x.cols));  // [rows, in]
    for_each_row_block(x, [&](std::int64_t begin, std::int64_t end, const float* rows) {
      round_to_bf16(rows, x_bf16_.data() + begin * x.cols, (end - begin) * x.cols);
    });
    for (const LinearOutput& output : outputs) {
      ATTNGEOM_CHECK(output.weight->cols == x.cols);
      multiply(x.rows, *output.weight, output.y);
    }
  }

 private:
  // y = x_bf16_ w^T
  void multiply(std::int64_t rows, const TensorView& w, float* y) {
    const std::int64_t in = w.cols;
    if (w.dtype == DType::kBF16) {
      matmul_.multiply(rows, in, w.rows, x_bf16_.data(), w.data, y, w.rows);
      return;
    }
    // F32/F16 weights: round a block of output rows at a time into bf16 scratch.
    const std::int64_t block_rows = std::max<std::int64_t>(1, kConvertBlockElems / in);
    w_bf16_.resize(static_cast<std::size_t>(std::min(block_rows, w.rows) * in));
    widened_.resize(w_bf16_.size());
    for (std::int64_t r0 = 0; r0 < w.rows; r0 += block_rows) {
      const std::int64_t nr = std::min(block_rows, w.rows - r0);
      widen_to_f32(w.dtype, w.row(r0), widened_.data(), static_cast<std::size_t>(nr * in));
      round_to_bf16(widened_.data(), w_bf16_.data(), nr * in);
      matmul_.multiply(rows, in, nr, x_bf16_.data(), w_bf16_.data(), y + r0, w.rows);
    }
  }

  static constexpr std::int64_t kConvertBlockElems = 1 << 22;
  Bf16Matmul matmul_;
  std::vector<std::uint16_t> x_bf16_;
  std::vector<std::uint16_t> w_bf16_;
  std::vector<float> widened_;  // a block of F32/F16 weight rows widened, before rounding
};

}  // namespace

bool cpu_has_amx() { return dnnl::get_effective_cpu_isa() == dnnl::cpu_isa::avx512_core_amx; }

bool cpu_has_fast_bf16_matmul() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  if (isa == dnnl::cpu_isa::avx512_core_amx) return true;
  // AMD's AVX512-BF16 issues the bf16 dot product as often as the fp32 FMA, at twice its
  // multiplies, so oneDNN's bf16 matmul outruns its sgemm there; Intel's without AMX runs it
  // slower than sgemm (docs/performance-log.md holds the measurements).
  return isa == dnnl::cpu_isa::avx512_core_bf16 && cpu_vendor() == "AuthenticAMD";
}

bool cpu_has_bf16_matmul() {
  // Asked of oneDNN itself: which ISAs carry a bf16 matmul is its business, not a list here.
  using dnnl::memory;
  try {
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const memory::desc x({1, 16}, memory::data_type::bf16, memory::format_tag::ab);
    const memory::desc w({16, 16}, memory::data_type::bf16, memory::format_tag::ba);
    const memory::desc y({1, 16}, memory::data_type::f32, memory::format_tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(x, w, y), engine);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

std::unique_ptr<LinearBackend> make_bf16_backend() { return std::make_unique<Bf16Backend>(); }

std::unique_ptr<LinearBackend> make_backend(Precision precision, Fp32Matmul fp32_matmul, DType weights) {
  if (precision == Precision::kBf16) return make_bf16_backend();
  return fp32_matmul == Fp32Matmul::kBf16x3 && weights == DType::kBF16 ? make_bf16x3_backend() : make_fp32_backend();
}

}  // namespace attngeom
