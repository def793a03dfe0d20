#pragma once
// One made-up sequence handed to an observer as the engine hands a forward pass: per layer
// the values, then blocks of one kv group's heads, each from a buffer that the engine reuses
// (overwritten with NaN once the call returns), so that an observer behind a queue must copy.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "attention_shape_config.h"
#include "model/observer.h"

namespace attngeom::fed {

constexpr int kLayers = 3, kHeads = 4, kKvHeads = 2, kDim = 8, kSeq = 40;
constexpr float kOverwritten = std::numeric_limits<float>::quiet_NaN();

inline ModelConfig config() { return attention_shape_config(kLayers, kHeads, kKvHeads, kDim); }

inline bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// Gaussian values and random causal rows drawn from `seed`; `rows` are the captured positions.
inline void feed(ForwardObserver& observer, const std::vector<int>& rows, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<float> values(kKvHeads * kSeq * kDim);  // [kv, T, d]
  const int group = kHeads / kKvHeads;
  std::vector<float> probs(group * rows.size() * kSeq);  // [group heads, rows, T]
  for (int l = 0; l < kLayers; ++l) {
    for (float& v : values) v = gauss(rng);
    observer.on_values(l, ValueStates{kKvHeads, kSeq, kDim, values.data()});
    for (int begin = 0; begin < kHeads; begin += group) {
      std::fill(probs.begin(), probs.end(), 0.0f);
      for (std::size_t r = 0; r < rows.size() * group; ++r) {
        const int q = rows[r % rows.size()];
        float* p = probs.data() + r * kSeq;
        double sum = 0.0;
        for (int k = 0; k <= q; ++k) sum += p[k] = std::exp(2.0f * gauss(rng));
        for (int k = 0; k <= q; ++k) p[k] = static_cast<float>(p[k] / sum);
      }
      observer.on_attention(l, AttentionRows{begin, begin + group, rows, kSeq, probs.data()});
      std::fill(probs.begin(), probs.end(), kOverwritten);
    }
    std::fill(values.begin(), values.end(), kOverwritten);
  }
}

}  // namespace attngeom::fed
