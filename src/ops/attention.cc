#include "ops/attention.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "ops/elementwise.h"
#include "ops/gemm.h"
#include "util/error.h"
#include "util/parallel.h"

namespace attngeom {

void AttentionScratch::reserve(int threads, int seq, std::size_t captured_floats) {
  const auto per_thread_scores = static_cast<std::size_t>(kBlockRows) * seq;
  if (scores.size() < per_thread_scores * threads) scores.resize(per_thread_scores * threads);
  if (captured.size() < captured_floats) captured.resize(captured_floats);
}

void keep_top_n(float* probs, int count, int n, int* order) {
  if (n <= 0 || n >= count) return;
  // Strict total order: larger probability first, then the lower index.
  const auto before = [probs](int a, int b) { return probs[a] > probs[b] || (probs[a] == probs[b] && a < b); };
  for (int i = 0; i < count; ++i) order[i] = i;
  std::nth_element(order, order + (n - 1), order + count, before);
  // Key i is kept iff it is not ordered after the n-th key (value, index) = (last_p, last_i).
  const int last_i = order[n - 1];
  const float last_p = probs[last_i];
  const auto kept = [&](int i) { return probs[i] > last_p || (probs[i] == last_p && i <= last_i); };
  double sum = 0;
  for (int i = 0; i < count; ++i) {
    if (kept(i)) sum += probs[i];
  }
  for (int i = 0; i < count; ++i) {  // decides i from its own, not yet rescaled, value
    probs[i] = kept(i) ? static_cast<float>(probs[i] / sum) : 0.0f;
  }
}

namespace {

// One head: all query blocks, the ALiBi bias and the soft-cap when set, softmax (then top-N when topn > 0),
// P V, and copies of the captured rows. bf16: null for fp32 products; both share every
// step between the two products.
void attend_one_head(const AttentionShape& shape, int head, const float* q, const float* k, const float* v, float* out,
                     std::span<const int> capture_rows, int topn, float* scores, float* captured, int* order,
                     Bf16AttentionProducts* bf16, int thread) {
  const int d = shape.head_dim;
  const int kv = kv_head_of(shape, head);
  const std::int64_t q_stride = static_cast<std::int64_t>(shape.heads) * d;
  const std::int64_t kv_stride = static_cast<std::int64_t>(shape.kv_heads) * d;
  const float* q_head = q + static_cast<std::int64_t>(head) * d;
  const float* k_head = k + static_cast<std::int64_t>(kv) * d;
  const float* v_head = v + static_cast<std::int64_t>(kv) * d;
  float* out_head = out + static_cast<std::int64_t>(head) * d;
  const AlibiHead alibi = shape.alibi(head);
  std::size_t next_capture = 0;

  for (int r0 = 0; r0 < shape.seq; r0 += AttentionScratch::kBlockRows) {
    const AttentionBlock b = attention_block(shape, head, r0);
    const int r1 = r0 + b.rows;
    // scores[rows, keys] = scale * Q[r0:r1] K[key0:r1]^T
    if (bf16 != nullptr) {
      bf16->scores(b, scores, thread);
    } else {
      gemm_f32(false, true, b.rows, b.keys, d, shape.scale, q_head + r0 * q_stride, q_stride,
               k_head + b.key0 * kv_stride, kv_stride, 0.0f, scores, b.keys);
    }
    for (int i = r0; i < r1; ++i) {
      float* row = scores + static_cast<std::int64_t>(i - r0) * b.keys;
      const int lo = first_visible_key(shape, i) - b.key0;
      const int hi = i - b.key0 + 1;  // exclusive
      std::fill(row, row + lo, 0.0f);
      if (alibi.slope != 0) {
        for (int j = lo; j < hi; ++j) row[j] += alibi_bias(alibi.slope, alibi.before_scale, shape.scale, i, b.key0 + j);
      }
      if (shape.softcap > 0) soft_cap(row + lo, hi - lo, shape.softcap);
      softmax_row(row + lo, hi - lo);
      if (topn > 0) keep_top_n(row + lo, hi - lo, topn, order);
      std::fill(row + hi, row + b.keys, 0.0f);
      if (next_capture < capture_rows.size() && capture_rows[next_capture] == i) {
        float* dst = captured + next_capture * static_cast<std::size_t>(shape.seq);
        std::fill(dst, dst + shape.seq, 0.0f);
        std::memcpy(dst + b.key0, row, sizeof(float) * static_cast<std::size_t>(b.keys));
        ++next_capture;
      }
    }
    // out[r0:r1, head] = P[rows, keys] V[key0:r1]
    if (bf16 != nullptr) {
      bf16->weighted_sum(b, scores, out, thread);
    } else {
      gemm_f32(false, false, b.rows, d, b.keys, 1.0f, scores, b.keys, v_head + b.key0 * kv_stride, kv_stride, 0.0f,
               out_head + r0 * q_stride, q_stride);
    }
  }
  ATTNGEOM_CHECK(next_capture == capture_rows.size());
}

}  // namespace

void causal_attention(const AttentionShape& shape, const float* q, const float* k, const float* v, float* out,
                      std::span<const int> capture_rows, const AttentionRowSink& sink, std::span<const float> head_gate,
                      AttentionScratch& scratch, std::span<const int> head_topn, Precision products) {
  ATTNGEOM_CHECK(shape.heads % shape.kv_heads == 0);
  ATTNGEOM_CHECK(std::is_sorted(capture_rows.begin(), capture_rows.end()));
  ATTNGEOM_CHECK(head_topn.empty() || head_topn.size() == static_cast<std::size_t>(shape.heads));
  const int threads = omp_get_max_threads();
  const bool capturing = !capture_rows.empty() && sink;
  const int block_heads = capturing ? capture_block_heads(shape, capture_rows.size()) : shape.heads;
  const std::size_t head_rows = capture_rows.size() * static_cast<std::size_t>(shape.seq);  // [rows, seq] per head
  scratch.reserve(threads, shape.seq, capturing ? static_cast<std::size_t>(block_heads) * head_rows : 0);
  if (!head_topn.empty() && scratch.order.size() < static_cast<std::size_t>(threads) * shape.seq) {
    scratch.order.resize(static_cast<std::size_t>(threads) * shape.seq);
  }
  Bf16AttentionProducts* bf16 = nullptr;
  if (products == Precision::kBf16) {
    scratch.bf16.prepare(shape, q, k, v, threads);
    bf16 = &scratch.bf16;
  }
  const std::int64_t q_stride = static_cast<std::int64_t>(shape.heads) * shape.head_dim;

  for (int begin = 0; begin < shape.heads; begin += block_heads) {
    const int end = std::min(begin + block_heads, shape.heads);
    parallel_for_each(static_cast<std::size_t>(end - begin), [&](std::size_t index) {
      const int head = begin + static_cast<int>(index);
      const auto t = static_cast<std::size_t>(omp_get_thread_num());
      float* scores = scratch.scores.data() + t * AttentionScratch::kBlockRows * static_cast<std::size_t>(shape.seq);
      float* captured = capturing ? scratch.captured.data() + index * head_rows : nullptr;
      const int topn = head_topn.empty() ? 0 : head_topn[static_cast<std::size_t>(head)];
      int* order = topn > 0 ? scratch.order.data() + t * static_cast<std::size_t>(shape.seq) : nullptr;
      attend_one_head(shape, head, q, k, v, out, capturing ? capture_rows : std::span<const int>(), topn, scores,
                      captured, order, bf16, static_cast<int>(t));
      if (!head_gate.empty() && head_gate[static_cast<std::size_t>(head)] != 1.0f) {
        const float gate = head_gate[static_cast<std::size_t>(head)];
        for (int i = 0; i < shape.seq; ++i) {
          float* o = out + i * q_stride + static_cast<std::int64_t>(head) * shape.head_dim;
          for (int j = 0; j < shape.head_dim; ++j) o[j] *= gate;
        }
      }
    });
    if (capturing)
      sink(AttentionRows{begin, end, capture_rows, shape.seq, scratch.captured.data(), MemorySpace::kHost});
  }
}

}  // namespace attngeom
