#pragma once
// The steps of attention taken a tile of keys at a time with a running softmax, as the GPU's
// fused bf16 kernel (cuda_fused_attention.cu) takes them for the rows it does not capture:
// each row keeps the largest score seen and the sum of exp(score - largest), and the weighted
// sum of values so far is rescaled whenever the largest rises. Plain C++17, so that the CPU runs
// the same steps in tests (tests/unit/attention_tiles_test.cc).
#include <cmath>
#include <cstddef>

#include "util/half.h"
#include "util/host_device.h"

namespace attngeom {

// Query rows and keys of one tile of the fused kernel, its four warps taking 16 rows each.
inline constexpr int kFusedTileRows = 64;
inline constexpr int kFusedTileKeys = 64;
inline constexpr int kFusedWarps = kFusedTileRows / 16;
// Its rows in shared memory are padded by 16 bytes (8 bf16, 4 floats), so that a fragment's
// rows fall in different banks; every fragment still starts on 32 bytes.
inline constexpr int kFusedPadBf16 = 8;
inline constexpr int kFusedPadFloat = 4;
inline constexpr int kFusedMaxHeadDim = 256;

// Its shared memory for head dimension d: the K and V tiles [64, d + 8] bf16 (the Q tile passes
// through the K tile into registers first); per warp its scores [16, 68] fp32, its weights
// [16, 72] bf16, its output sums [16, d + 4] fp32 and one product [16, 20] fp32. Each region is
// a multiple of 128 bytes when d is a multiple of 16; two blocks fit an SM of 228 KiB up to d = 128.
inline constexpr std::size_t fused_attention_shared_bytes(int d) {
  const auto tile = static_cast<std::size_t>(d + kFusedPadBf16) * 2;
  const auto per_warp_floats = static_cast<std::size_t>(kFusedTileKeys + kFusedPadFloat) +  // scores
                               static_cast<std::size_t>(d + kFusedPadFloat) + 16 + kFusedPadFloat;
  return 2 * kFusedTileKeys * tile + kFusedWarps * 16 * (per_warp_floats * 4 + (kFusedTileKeys + kFusedPadBf16) * 2);
}

// Whether the fused kernel takes a layer's bf16 attention without top-N: a head dimension that
// is a multiple of 16 up to 256, tiles within the GPU's shared memory per block, and at most
// one row in 8 captured (the blocks compute the captured rows' probabilities again).
inline constexpr bool fused_attention_fits(int head_dim, std::size_t shared_limit, std::size_t captured_rows, int seq) {
  return head_dim > 0 && head_dim % 16 == 0 && head_dim <= kFusedMaxHeadDim &&
         fused_attention_shared_bytes(head_dim) <= shared_limit && captured_rows * 8 <= static_cast<std::size_t>(seq);
}

// The first key that query row i sees (window 0: every key from 0; else the window's last keys).
ATTNGEOM_HD inline int first_visible_key(int i, int window) {
  return window > 0 && i - window + 1 > 0 ? i - window + 1 : 0;
}

// What ALiBi adds to query row i's scaled score for key j (slope 0: nothing). BLOOM and MPT:
// slope * (j - i); BLOOM adds slope * j and MPT slope * (j - (T - 1)), which differ from it by a
// constant per row and so give the same softmax, and relative to the query the bias is smallest
// on the recent keys that ALiBi favours, where fp32 keeps it most exactly. Falcon-RW
// (before_scale): HF Falcon's build_alibi_tensor rounds the key's position j and its product
// with the (bf16) slope to bf16, and adds it to q.k before the scale.
ATTNGEOM_HD inline float alibi_bias(float slope, bool before_scale, float scale, int i, int j) {
  if (!before_scale) return slope * static_cast<float>(j - i);
  const float position = bf16_to_f32(f32_to_bf16(static_cast<float>(j)));
  return scale * bf16_to_f32(f32_to_bf16(slope * position));
}

// The ALiBi of one head: its slope and the form of alibi_bias.
struct AlibiHead {
  float slope = 0;
  bool before_scale = false;
};

// Query row i's score for key j before the softmax: the scaled product plus the ALiBi bias,
// soft-capped when set, or -inf where the mask hides j (after i, before the window) or the row
// is past the sequence.
ATTNGEOM_HD inline float visible_score(float product, int i, int j, int seq, int window, float scale, float softcap,
                                       AlibiHead alibi) {
  if (i >= seq || j > i || j < first_visible_key(i, window)) return -HUGE_VALF;
  const float s = scale * product + alibi_bias(alibi.slope, alibi.before_scale, scale, i, j);
  return softcap > 0 ? softcap * tanhf(s / softcap) : s;
}

// One row's running softmax (or a part of the row's keys, all parts raised to the same maxima).
struct RunningSoftmax {
  float max = -HUGE_VALF;
  double sum = 0;  // of exp(score - max) over the keys so far

  // Takes the next tile's largest score; returns the factor by which what was accumulated
  // about the old maximum is rescaled (0 when nothing was, 1 when the maximum stays).
  ATTNGEOM_HD float raise_max(float tile_max) {
    if (!(tile_max > max)) return 1.0f;
    const float factor = max == -HUGE_VALF ? 0.0f : expf(max - tile_max);
    max = tile_max;
    sum *= factor;
    return factor;
  }
  // exp(score - max), added to the sum; a masked key weighs 0.
  ATTNGEOM_HD float weight(float score) {
    if (score == -HUGE_VALF) return 0.0f;
    const float e = expf(score - max);
    sum += e;
    return e;
  }
};

}  // namespace attngeom
