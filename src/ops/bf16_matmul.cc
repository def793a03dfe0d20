#include "ops/bf16_matmul.h"

#include <algorithm>
#include <vector>

#include "util/half.h"

namespace attngeom {

using dnnl::memory;

Bf16Matmul::Bf16Matmul(DeepProducts deep) : deep_(deep), engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

void Bf16Matmul::multiply(std::int64_t rows, std::int64_t in, std::int64_t out, const std::uint16_t* x, const void* w,
                          float* y, std::int64_t ldy, bool accumulate) {
  if (deep_ == DeepProducts::kOneCall || in < 2 * out || out <= kDeepBlockColumns) {
    product(rows, in, out, x, w, y, ldy, accumulate);
    return;
  }
  const auto* rows_of_w = static_cast<const std::uint16_t*>(w);  // [out, in]
  for (std::int64_t first = 0; first < out; first += kDeepBlockColumns) {
    const std::int64_t columns = std::min(kDeepBlockColumns, out - first);
    product(rows, in, columns, x, rows_of_w + first * in, y + first, ldy, accumulate);
  }
}

void Bf16Matmul::product(std::int64_t rows, std::int64_t in, std::int64_t out, const std::uint16_t* x, const void* w,
                         float* y, std::int64_t ldy, bool accumulate) {
  const auto key = std::make_tuple(rows, in, out, ldy, accumulate);
  auto it = primitives_.find(key);
  if (it == primitives_.end()) {
    const memory::desc src({rows, in}, memory::data_type::bf16, memory::format_tag::ab);
    const memory::desc wei({in, out}, memory::data_type::bf16, memory::format_tag::ba);  // [out, in] as W^T
    const memory::desc dst({rows, out}, memory::data_type::f32, memory::dims{ldy, 1});
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);  // y += x w^T, added in fp32
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), attr, engine_);
    it = primitives_.emplace(key, Entry{dnnl::matmul(pd), src, wei, dst}).first;
  }
  Entry& e = it->second;
  memory src_mem(e.src, engine_, const_cast<std::uint16_t*>(x));
  memory wei_mem(e.wei, engine_, const_cast<void*>(w));  // read-only use of the mmapped weights
  memory dst_mem(e.dst, engine_, y);
  e.matmul.execute(stream_, {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, wei_mem}, {DNNL_ARG_DST, dst_mem}});
  stream_.wait();
}

void round_to_bf16(const float* src, std::uint16_t* dst, std::int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (std::int64_t i = 0; i < count; ++i) dst[i] = f32_to_bf16(src[i]);
}

void for_each_row_block(const LinearInput& x,
                        const std::function<void(std::int64_t begin, std::int64_t end, const float* rows)>& convert) {
  // About 256 KiB of fp32 per block: a produced block is converted from L2.
  const std::int64_t block_rows = std::max<std::int64_t>(1, (std::int64_t{1} << 16) / x.cols);
  const std::int64_t blocks = (x.rows + block_rows - 1) / block_rows;
#pragma omp parallel
  {
    std::vector<float> produced(x.stored != nullptr ? 0 : static_cast<std::size_t>(block_rows * x.cols));
#pragma omp for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t begin = b * block_rows;
      const std::int64_t end = std::min(x.rows, begin + block_rows);
      if (x.stored != nullptr) {
        convert(begin, end, x.stored + begin * x.cols);
      } else {
        x.produce(begin, end, produced.data());
        convert(begin, end, produced.data());
      }
    }
  }
}

}  // namespace attngeom
