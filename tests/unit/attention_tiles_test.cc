// The fused GPU attention's steps (ops/attention_tiles.h) run on the CPU in the kernel's
// tiling and control flow: tiles of 64 query rows and 64 keys from the first row's first
// visible key, each row's keys in two halves of 32 with their own running sums raised to the
// tile's maximum, the output sums rescaled by the factor, then divided by both halves' sums.
// In fp32 throughout, without the kernel's bf16 roundings of q, k, v and the weights (the GPU
// test bounds those against the blocks). Against a float64 softmax attention: a wrong mask,
// tile range or rescale moves outputs by O(|v|), while fp32 products and exps stay within
// 64 d eps of the largest output.
#include "ops/attention_tiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "util/half.h"

namespace attngeom {
namespace {

struct Case {
  int seq, heads, kv_heads, head_dim, window;
  float scale, softcap;
  float slope = 0;  // head h's ALiBi slope is slope / (h + 1)
  bool before_scale = false;
};

struct Inputs {
  std::vector<float> q, k, v;  // [seq, heads * d], [seq, kv_heads * d] twice
};

Inputs random_inputs(const Case& c, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Inputs in;
  in.q.resize(static_cast<std::size_t>(c.seq) * c.heads * c.head_dim);
  in.k.resize(static_cast<std::size_t>(c.seq) * c.kv_heads * c.head_dim);
  in.v.resize(in.k.size());
  for (std::vector<float>* x : {&in.q, &in.k, &in.v}) {
    for (float& e : *x) e = normal(rng);
  }
  return in;
}

float dot(const float* a, const float* b, int d) {
  float sum = 0;
  for (int i = 0; i < d; ++i) sum += a[i] * b[i];
  return sum;
}

// What the kernel computes, block by block and lane by lane.
std::vector<float> tiled_attention(const Case& c, const Inputs& in) {
  const int d = c.head_dim, group = c.heads / c.kv_heads;
  std::vector<float> out(in.q.size(), 0.0f);
  for (int h = 0; h < c.heads; ++h) {
    const int kv = h / group;
    for (int q0 = 0; q0 < c.seq; q0 += kFusedTileRows) {
      const int end = std::min(q0 + kFusedTileRows, c.seq);
      for (int query = q0; query < q0 + kFusedTileRows; ++query) {
        RunningSoftmax halves[2];
        std::vector<float> sums(static_cast<std::size_t>(d), 0.0f);
        for (int k0 = first_visible_key(q0, c.window); k0 < end; k0 += kFusedTileKeys) {
          float scores[kFusedTileKeys];
          float tile_max = -HUGE_VALF;
          for (int j = 0; j < kFusedTileKeys; ++j) {
            const int key = k0 + j;
            // Rows past the sequence and keys past `end` are zeros in the kernel's tiles.
            const float product = query < c.seq && key < end
                                      ? dot(&in.q[(static_cast<std::size_t>(query) * c.heads + h) * d],
                                            &in.k[(static_cast<std::size_t>(key) * c.kv_heads + kv) * d], d)
                                      : 0.0f;
            scores[j] = visible_score(product, query, key, c.seq, c.window, c.scale, c.softcap,
                                      {c.slope / (h + 1), c.before_scale});
            tile_max = std::max(tile_max, scores[j]);
          }
          const float factor = halves[0].raise_max(tile_max);
          EXPECT_EQ(halves[1].raise_max(tile_max), factor);
          std::vector<float> product(static_cast<std::size_t>(d), 0.0f);
          for (int j = 0; j < kFusedTileKeys; ++j) {
            const float w = halves[j / 32].weight(scores[j]);
            const int key = k0 + j;
            if (key >= end) continue;
            for (int i = 0; i < d; ++i)
              product[i] += w * in.v[(static_cast<std::size_t>(key) * c.kv_heads + kv) * d + i];
          }
          for (int i = 0; i < d; ++i) sums[i] = sums[i] * factor + product[i];
        }
        if (query >= c.seq) continue;
        const auto inverse = static_cast<float>(1.0 / (halves[0].sum + halves[1].sum));
        for (int i = 0; i < d; ++i) out[(static_cast<std::size_t>(query) * c.heads + h) * d + i] = sums[i] * inverse;
      }
    }
  }
  return out;
}

// Softmax attention in float64, straight from the definitions.
std::vector<double> reference_attention(const Case& c, const Inputs& in) {
  const int d = c.head_dim, group = c.heads / c.kv_heads;
  std::vector<double> out(in.q.size(), 0.0);
  for (int h = 0; h < c.heads; ++h) {
    const int kv = h / group;
    for (int i = 0; i < c.seq; ++i) {
      const int first = c.window > 0 ? std::max(0, i - c.window + 1) : 0;
      std::vector<double> s(static_cast<std::size_t>(i + 1), -HUGE_VAL);
      double largest = -HUGE_VAL;
      for (int j = first; j <= i; ++j) {
        double product = 0;
        for (int x = 0; x < d; ++x) {
          product += static_cast<double>(in.q[(static_cast<std::size_t>(i) * c.heads + h) * d + x]) *
                     in.k[(static_cast<std::size_t>(j) * c.kv_heads + kv) * d + x];
        }
        // Falcon-RW's bias: j and its product with the slope rounded to bf16, before the scale.
        const float slope = c.slope / (h + 1);
        const float rounded = bf16_to_f32(f32_to_bf16(slope * bf16_to_f32(f32_to_bf16(static_cast<float>(j)))));
        product =
            c.before_scale ? (product + rounded) * c.scale : product * c.scale + static_cast<double>(slope) * (j - i);
        s[j] = c.softcap > 0 ? c.softcap * std::tanh(product / c.softcap) : product;
        largest = std::max(largest, s[j]);
      }
      double total = 0;
      for (int j = first; j <= i; ++j) total += std::exp(s[j] - largest);
      for (int j = first; j <= i; ++j) {
        const double p = std::exp(s[j] - largest) / total;
        for (int x = 0; x < d; ++x) {
          out[(static_cast<std::size_t>(i) * c.heads + h) * d + x] +=
              p * in.v[(static_cast<std::size_t>(j) * c.kv_heads + kv) * d + x];
        }
      }
    }
  }
  return out;
}

TEST(AttentionTiles, TheKernelsStepsGiveSoftmaxAttention) {
  const std::vector<Case> cases = {
      {1, 2, 1, 16, 0, 0.25f, 0.0f},                // one row
      {63, 4, 2, 32, 0, 0.18f, 0.0f},               // one partial tile
      {64, 4, 2, 32, 0, 0.18f, 0.0f},               // one whole tile
      {65, 4, 2, 32, 0, 0.18f, 0.0f},               // a tile of one row after a whole one
      {200, 4, 1, 32, 37, 0.18f, 0.0f},             // a window shorter than a tile: rows see keys of two tiles at most
      {200, 2, 2, 32, 64, 0.18f, 0.0f},             // a window of one tile
      {300, 4, 2, 16, 100, 0.25f, 0.0f},            // a window over tile edges
      {150, 4, 2, 32, 1, 0.18f, 0.0f},              // each row sees only itself
      {130, 4, 2, 32, 0, 1.0f, 5.0f},               // soft-cap, large scores
      {130, 4, 2, 32, 50, 2.0f, 0.0f},              // large scores: the maximum rises often
      {200, 4, 2, 32, 0, 0.18f, 0.0f, 0.5f},        // ALiBi: far keys fade, slopes differ by head
      {300, 4, 2, 32, 0, 0.18f, 0.0f, 0.5f, true},  // Falcon-RW's: bf16 positions from 256 on
  };
  constexpr double kEps = std::numeric_limits<float>::epsilon();
  for (const Case& c : cases) {
    const Inputs in = random_inputs(c, static_cast<unsigned>(c.seq + c.window));
    const std::vector<float> got = tiled_attention(c, in);
    const std::vector<double> want = reference_attention(c, in);
    double scale = 0;
    for (const double w : want) scale = std::max(scale, std::abs(w));
    const double tolerance = 64 * c.head_dim * kEps * scale;
    const std::string what = "seq " + std::to_string(c.seq) + ", window " + std::to_string(c.window);
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tolerance) << what << " at " << i;
  }
}

TEST(AttentionTiles, ARunningSoftmaxRescalesWhatItHasSummed) {
  RunningSoftmax running;
  EXPECT_EQ(running.raise_max(-HUGE_VALF), 1.0f);  // a tile all masked changes nothing
  EXPECT_EQ(running.weight(-HUGE_VALF), 0.0f);
  EXPECT_EQ(running.raise_max(1.0f), 0.0f);  // nothing summed yet: what was accumulated is dropped
  EXPECT_EQ(running.weight(1.0f), 1.0f);
  EXPECT_EQ(running.raise_max(0.5f), 1.0f);  // a lower tile maximum keeps the maximum
  EXPECT_FLOAT_EQ(running.weight(0.5f), std::exp(-0.5f));
  const float factor = running.raise_max(3.0f);
  EXPECT_FLOAT_EQ(factor, std::exp(-2.0f));
  EXPECT_NEAR(running.sum, (1.0 + std::exp(-0.5)) * std::exp(-2.0), 1e-6);
  EXPECT_EQ(running.max, 3.0f);
}

TEST(AttentionTiles, FirstVisibleKeyFollowsTheWindow) {
  EXPECT_EQ(first_visible_key(10, 0), 0);
  EXPECT_EQ(first_visible_key(10, 4), 7);  // keys 7, 8, 9, 10
  EXPECT_EQ(first_visible_key(2, 4), 0);
  EXPECT_EQ(visible_score(1.0f, 10, 6, 20, 4, 1.0f, 0.0f, {}), -HUGE_VALF);
  EXPECT_EQ(visible_score(1.0f, 10, 11, 20, 0, 1.0f, 0.0f, {0.5f}), -HUGE_VALF);
  EXPECT_EQ(visible_score(1.0f, 20, 0, 20, 0, 1.0f, 0.0f, {}), -HUGE_VALF);  // past the sequence
  EXPECT_EQ(visible_score(2.0f, 10, 7, 20, 4, 0.5f, 0.0f, {}), 1.0f);
  EXPECT_EQ(visible_score(2.0f, 10, 7, 20, 4, 0.5f, 0.0f, {0.25f}), 0.25f);  // ALiBi: 0.25 * (7 - 10) added
  // Falcon-RW's: 0.5 * (2 + 0.25 * 7) = 1.875; key 257 is position 256 in bf16.
  EXPECT_EQ(visible_score(2.0f, 10, 7, 20, 0, 0.5f, 0.0f, {0.25f, true}), 1.875f);
  EXPECT_EQ(visible_score(0.0f, 300, 257, 400, 0, 1.0f, 0.0f, {1.0f, true}), 256.0f);
}

}  // namespace
}  // namespace attngeom
