#include "ops/attention_bf16.h"

#include <algorithm>

#include "ops/bf16_matmul.h"
#include "util/error.h"
#include "util/half.h"

namespace attngeom {

using dnnl::memory;

namespace {

// x [seq, heads * d] -> out [heads, seq, d] in bf16, in parallel.
void round_head_major(const float* x, int seq, int heads, int d, std::uint16_t* out) {
  const std::int64_t stride = static_cast<std::int64_t>(heads) * d;
#pragma omp parallel for schedule(static)
  for (int t = 0; t < seq; ++t) {
    for (int h = 0; h < heads; ++h) {
      const float* src = x + t * stride + static_cast<std::int64_t>(h) * d;
      std::uint16_t* dst = out + (static_cast<std::int64_t>(h) * seq + t) * d;
      for (int c = 0; c < d; ++c) dst[c] = f32_to_bf16(src[c]);
    }
  }
}

}  // namespace

Bf16AttentionProducts::Bf16AttentionProducts() : engine_(dnnl::engine::kind::cpu, 0) {}

void Bf16AttentionProducts::prepare(const AttentionShape& shape, const float* q, const float* k, const float* v,
                                    int threads) {
  ATTNGEOM_CHECK(shape.heads % shape.kv_heads == 0 && threads > 0);
  if (shape.head_dim != shape_.head_dim ||
      shape.scale != shape_.scale) {  // what the products depend on besides (rows, keys)
    products_.clear();
    scratchpad_bytes_ = 0;
  }
  shape_ = shape;
  q_.resize(static_cast<std::size_t>(shape.seq) * shape.heads * shape.head_dim);
  k_.resize(static_cast<std::size_t>(shape.seq) * shape.kv_heads * shape.head_dim);
  v_.resize(k_.size());
  round_head_major(q, shape.seq, shape.heads, shape.head_dim, q_.data());
  round_head_major(k, shape.seq, shape.kv_heads, shape.head_dim, k_.data());
  round_head_major(v, shape.seq, shape.kv_heads, shape.head_dim, v_.data());
  for (int r0 = 0; r0 < shape.seq; r0 += kAttentionBlockRows) {
    const AttentionBlock b = attention_block(shape, 0, r0);
    products(b.rows, b.keys);
  }
  if (threads_.size() < static_cast<std::size_t>(threads)) threads_.resize(static_cast<std::size_t>(threads));
  for (PerThread& t : threads_) {
    if (!t.stream) t.stream = dnnl::stream(engine_);
    if (!t.scratchpad || t.scratchpad.get_desc().get_size() < scratchpad_bytes_) {
      const auto bytes = static_cast<memory::dim>(std::max<std::size_t>(scratchpad_bytes_, 1));
      t.scratchpad = memory({{bytes}, memory::data_type::u8, memory::format_tag::a}, engine_);
    }
    t.p.resize(static_cast<std::size_t>(kAttentionBlockRows) * shape.seq);
    t.out.resize(static_cast<std::size_t>(kAttentionBlockRows) * shape.head_dim);
  }
}

const Bf16AttentionProducts::Products& Bf16AttentionProducts::products(int rows, int keys) {
  const auto key = std::make_pair(rows, keys);
  auto it = products_.find(key);
  if (it != products_.end()) return it->second;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  const memory::dim d = shape_.head_dim, r = rows, n = keys;
  Products p;
  p.q = memory::desc({r, d}, dt::bf16, tag::ab);  // [rows, d]
  p.k = memory::desc({d, n}, dt::bf16, tag::ba);  // [keys, d] read as K^T
  p.s = memory::desc({r, n}, dt::f32, tag::ab);   // [rows, keys]
  p.p = memory::desc({r, n}, dt::bf16, tag::ab);  // [rows, keys]
  p.v = memory::desc({n, d}, dt::bf16, tag::ab);  // [keys, d]
  p.o = memory::desc({r, d}, dt::f32, tag::ab);   // [rows, d]
  dnnl::primitive_attr scaled;
  scaled.set_output_scales(0, {shape_.scale});
  // Heads run on many threads at once, each with its own scratchpad (oneDNN's shared one is
  // not safe concurrently).
  scaled.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::primitive_attr plain;
  plain.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::matmul::primitive_desc scores_pd(dnnl::matmul::desc(p.q, p.k, p.s), scaled, engine_);
  const dnnl::matmul::primitive_desc sum_pd(dnnl::matmul::desc(p.p, p.v, p.o), plain, engine_);
  p.scores = dnnl::matmul(scores_pd);
  p.weighted_sum = dnnl::matmul(sum_pd);
  scratchpad_bytes_ =
      std::max({scratchpad_bytes_, scores_pd.scratchpad_desc().get_size(), sum_pd.scratchpad_desc().get_size()});
  return products_.emplace(key, std::move(p)).first->second;
}

void Bf16AttentionProducts::scores(const AttentionBlock& b, float* scores, int thread) {
  const Products& p = products_.at({b.rows, b.keys});
  PerThread& t = threads_[static_cast<std::size_t>(thread)];
  const std::int64_t d = shape_.head_dim, seq = shape_.seq;
  memory q(p.q, engine_, q_.data() + (b.head * seq + b.r0) * d);
  memory k(p.k, engine_, k_.data() + (kv_head_of(shape_, b.head) * seq + b.key0) * d);
  memory s(p.s, engine_, scores);
  p.scores.execute(t.stream,
                   {{DNNL_ARG_SRC, q}, {DNNL_ARG_WEIGHTS, k}, {DNNL_ARG_DST, s}, {DNNL_ARG_SCRATCHPAD, t.scratchpad}});
  t.stream.wait();
}

void Bf16AttentionProducts::weighted_sum(const AttentionBlock& b, const float* probs, float* out, int thread) {
  const Products& p = products_.at({b.rows, b.keys});
  PerThread& t = threads_[static_cast<std::size_t>(thread)];
  const std::int64_t d = shape_.head_dim, seq = shape_.seq;
  // Inside the heads' parallel region, so round_to_bf16 runs on this thread alone.
  round_to_bf16(probs, t.p.data(), static_cast<std::int64_t>(b.rows) * b.keys);
  memory pm(p.p, engine_, t.p.data());
  memory v(p.v, engine_, v_.data() + (kv_head_of(shape_, b.head) * seq + b.key0) * d);
  memory o(p.o, engine_, t.out.data());
  p.weighted_sum.execute(
      t.stream, {{DNNL_ARG_SRC, pm}, {DNNL_ARG_WEIGHTS, v}, {DNNL_ARG_DST, o}, {DNNL_ARG_SCRATCHPAD, t.scratchpad}});
  t.stream.wait();
  const std::int64_t out_stride = static_cast<std::int64_t>(shape_.heads) * d;
  for (int i = 0; i < b.rows; ++i) {
    std::copy_n(t.out.data() + i * d, d, out + (b.r0 + i) * out_stride + b.head * d);
  }
}

}  // namespace attngeom
