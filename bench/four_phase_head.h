#pragma once
// The four-phase synthetic head that both geometry benchmarks time: kKeys keys of dimension
// kDim, drawn once with a fixed seed.
#include <cstddef>
#include <random>

#include "synth/synthetic.h"

namespace attngeom::bench {

inline constexpr std::size_t kKeys = 1024;
inline constexpr std::size_t kDim = 128;

inline const synth::SyntheticHead& four_phase_head() {
  static const synth::SyntheticHead head = [] {
    std::mt19937_64 rng(7);
    const synth::ValueSampler sampler({kDim, 1.0, 0.03, 0.2, 0.1, 0.1}, kKeys);
    return synth::synthetic_head(synth::attention_profile({}, kKeys), sampler, rng);
  }();
  return head;
}

}  // namespace attngeom::bench
