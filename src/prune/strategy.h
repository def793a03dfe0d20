#pragma once
// Head-level pruning orders (docs/method.md section 7). Each strategy gives every head an
// importance score from an analyze run; heads are masked in ascending importance
// (least important first), ties to the lower flat index, NaN scores last. The
// orders and their rationale are documented in docs/prune.md.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "prune/head_table.h"

namespace attngeom::prune {

enum class StrategyKind {
  kType,     // taxonomy order (type_order); a seeded random order within each type
  kRandom,   // a seeded random permutation
  kEntropy,  // highest normalised entropy first (diffuse heads)
  kSink,     // highest sink mass a_0 first (dormant heads)
  kLast,     // lowest last-token mass a_L first (least retriever-like)
  kFscore,   // lowest F at small N first (least separable selection)
};

struct Strategy {
  StrategyKind kind = StrategyKind::kType;
  bool reversed = false;     // "-rev" suffix: the opposite order (not for random)
  std::string name() const;  // the CLI / CSV identifier, e.g. "entropy", "sink-rev"
  bool seeded() const { return kind == StrategyKind::kType || kind == StrategyKind::kRandom; }
};

// "type,random,entropy,sink,last,fscore" (any subset, each at most once; "-rev" reverses
// a deterministic one). Throws InputError naming the bad item.
std::vector<Strategy> parse_strategies(const std::string& list);

// The taxonomy order of the `type` strategy: the four labels, each once, first masked
// first. Default (docs/prune.md): unclassified, mixer, reset, retriever.
std::vector<std::string> default_type_order();
std::vector<std::string> parse_type_order(const std::string& list);  // throws InputError

// Importance per head [layers, heads] (higher: masked later). `seed` is used by the
// seeded strategies: kRandom, and kType within a type (the same permutation as kRandom
// with that seed, so type and random orders of one seed are paired).
std::vector<double> importance(const Strategy& strategy, const HeadTable& table,
                               const std::vector<std::string>& type_order, std::uint64_t seed);

// Flat head indices in masking order: ascending importance, ties to the lower index,
// NaN last.
std::vector<int> masking_order(std::span<const double> importance);

// Heads masked at `fraction` of `total`: round(fraction * total), halves up (with a
// 1e-9 allowance so that, e.g., 0.3 * 5 counts as the half it is meant to be).
int heads_for_fraction(double fraction, int total);

// Gates [total]: 0 for the first `k` heads of `order`, 1 elsewhere.
std::vector<float> gates_masking_first(std::span<const int> order, int k);

// A uniformly random permutation of 0..n-1 from a 64-bit Mersenne Twister seeded
// with `seed` (Fisher-Yates with rejection sampling: identical on every platform).
std::vector<int> seeded_permutation(int n, std::uint64_t seed);

}  // namespace attngeom::prune
