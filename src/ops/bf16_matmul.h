#pragma once
// oneDNN bf16 matmul with fp32 accumulation and output, primitives cached by shape: the
// product both AMX paths (bf16, and fp32 from three bf16 terms) are built on.
#include <cstdint>
#include <functional>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>

#include "ops/gemm.h"

namespace attngeom {

// How a deep product (in >= 2 out, such as the MLP's down projection) is issued.
enum class DeepProducts {
  kColumnBlocks,  // blocks of kDeepBlockColumns outputs: oneDNN's gemm:jit path
  kOneCall,       // one dense call: oneDNN's brgemm path (the baseline gemm_bench compares against)
};

class Bf16Matmul {
 public:
  explicit Bf16Matmul(DeepProducts deep = DeepProducts::kColumnBlocks);

  // y[rows, out] (row stride ldy) = x[rows, in] * w^T (+ y when `accumulate`), with w
  // stored [out, in] in bf16 and read in place as a transposed view.
  void multiply(std::int64_t rows, std::int64_t in, std::int64_t out, const std::uint16_t* x, const void* w, float* y,
                std::int64_t ldy, bool accumulate = false);

  // oneDNN sends a dense product to brgemm, which runs deep products slower than its gemm:jit
  // path on AMX (bench/gemm_bench.cc, BM_DeepProduct, compares the two); a destination whose
  // row stride is wider than the product, as a block of columns has, goes to gemm:jit. Other
  // shapes run at least as well on brgemm, so they stay one call.
  static constexpr std::int64_t kDeepBlockColumns = 512;

 private:
  void product(std::int64_t rows, std::int64_t in, std::int64_t out, const std::uint16_t* x, const void* w, float* y,
               std::int64_t ldy, bool accumulate);

  DeepProducts deep_;
  struct Entry {
    dnnl::matmul matmul;
    dnnl::memory::desc src, wei, dst;
  };
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool>, Entry> primitives_;
};

// dst[i] = bf16(src[i]), round to nearest even (in parallel).
void round_to_bf16(const float* src, std::uint16_t* dst, std::int64_t count);

// Hands convert(begin, end, rows) every block of x's rows, rows[end - begin, cols] in fp32, on
// all threads: stored rows in place, produced ones through a per-thread block that is still
// in cache when converted.
void for_each_row_block(const LinearInput& x,
                        const std::function<void(std::int64_t begin, std::int64_t end, const float* rows)>& convert);

}  // namespace attngeom
