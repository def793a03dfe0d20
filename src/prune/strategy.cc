#include "prune/strategy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

#include "util/error.h"

namespace attngeom::prune {

namespace {

struct KindName {
  StrategyKind kind;
  const char* name;
};
constexpr KindName kKinds[] = {{StrategyKind::kType, "type"},       {StrategyKind::kRandom, "random"},
                               {StrategyKind::kEntropy, "entropy"}, {StrategyKind::kSink, "sink"},
                               {StrategyKind::kLast, "last"},       {StrategyKind::kFscore, "fscore"}};
constexpr const char* kRevSuffix = "-rev";

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) items.push_back(item);
  if (!list.empty() && list.back() == ',') items.emplace_back();
  return items;
}

// Uniform integer in [0, bound) by rejection (no modulo bias, no library-defined mapping).
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t bound) {
  const std::uint64_t limit =
      std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % bound;
  std::uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % bound;
}

}  // namespace

std::string Strategy::name() const {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return std::string(k.name) + (reversed ? kRevSuffix : "");
  }
  ATTNGEOM_CHECK(false);
  return {};
}

std::vector<Strategy> parse_strategies(const std::string& list) {
  const auto bad = [](const std::string& what) { return SettingError({setting("strategies"), ": " + what}); };
  std::vector<Strategy> out;
  for (const std::string& item : split_list(list)) {
    Strategy s;
    std::string base = item;
    if (base.size() > std::string_view(kRevSuffix).size() && base.ends_with(kRevSuffix)) {
      base.resize(base.size() - std::string_view(kRevSuffix).size());
      s.reversed = true;
    }
    const auto* found =
        std::find_if(std::begin(kKinds), std::end(kKinds), [&](const KindName& k) { return base == k.name; });
    if (found == std::end(kKinds)) {
      throw bad("unknown strategy '" + item +
                "' (expected type, random, entropy, sink, last or fscore, optionally with -rev)");
    }
    s.kind = found->kind;
    if (s.kind == StrategyKind::kRandom && s.reversed) throw bad("random-rev is the same as random");
    for (const Strategy& previous : out) {
      if (previous.name() == s.name()) throw bad("'" + item + "' is listed twice");
    }
    out.push_back(s);
  }
  if (out.empty()) throw bad("empty list");
  return out;
}

std::vector<std::string> default_type_order() { return {"unclassified", "mixer", "reset", "retriever"}; }

std::vector<std::string> parse_type_order(const std::string& list) {
  std::vector<std::string> order = split_list(list);
  std::vector<std::string> sorted = order, expected = default_type_order();
  std::sort(sorted.begin(), sorted.end());
  std::sort(expected.begin(), expected.end());
  if (sorted != expected) {
    throw SettingError({setting("type_order"),
                        " '" + list + "': expected each of unclassified, mixer, reset, retriever exactly once"});
  }
  return order;
}

std::vector<double> importance(const Strategy& strategy, const HeadTable& t, const std::vector<std::string>& type_order,
                               std::uint64_t seed) {
  const int n = t.grid.count();
  std::vector<double> score(static_cast<std::size_t>(n));
  switch (strategy.kind) {
    case StrategyKind::kType: {
      // The type's rank dominates; the taxonomy says nothing within a type, so heads of
      // one type are exchangeable: the seeded permutation orders them.
      const std::vector<int> perm = seeded_permutation(n, seed);
      for (int pos = 0; pos < n; ++pos) {
        const auto i = static_cast<std::size_t>(perm[static_cast<std::size_t>(pos)]);
        const auto rank = std::find(type_order.begin(), type_order.end(), t.label[i]);
        ATTNGEOM_CHECK(rank != type_order.end());
        score[i] = static_cast<double>(rank - type_order.begin()) * n + pos;
      }
      break;
    }
    case StrategyKind::kRandom: {
      const std::vector<int> perm = seeded_permutation(n, seed);
      for (int pos = 0; pos < n; ++pos) score[static_cast<std::size_t>(perm[static_cast<std::size_t>(pos)])] = pos;
      break;
    }
    case StrategyKind::kEntropy:
      for (int i = 0; i < n; ++i) score[static_cast<std::size_t>(i)] = -t.entropy[static_cast<std::size_t>(i)];
      break;
    case StrategyKind::kSink:
      for (int i = 0; i < n; ++i) score[static_cast<std::size_t>(i)] = -t.sink_mass[static_cast<std::size_t>(i)];
      break;
    case StrategyKind::kLast:
      score = t.last_mass;
      break;
    case StrategyKind::kFscore:
      score = t.f_small;
      break;
  }
  if (strategy.reversed) {
    for (double& s : score) s = -s;
  }
  for (double& s : score) {
    if (s == 0.0) s = 0.0;  // no negative zero in the exports
  }
  return score;
}

std::vector<int> masking_order(std::span<const double> score) {
  std::vector<int> order(score.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const double x = score[static_cast<std::size_t>(a)], y = score[static_cast<std::size_t>(b)];
    if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
    return x < y;
  });
  return order;
}

int heads_for_fraction(double fraction, int total) {
  ATTNGEOM_CHECK(fraction >= 0 && fraction <= 1);
  return std::min(total, static_cast<int>(std::floor(fraction * total + 0.5 + 1e-9)));
}

std::vector<float> gates_masking_first(std::span<const int> order, int k) {
  ATTNGEOM_CHECK(k >= 0 && static_cast<std::size_t>(k) <= order.size());
  std::vector<float> gates(order.size(), 1.0f);
  for (int i = 0; i < k; ++i) gates[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = 0.0f;
  return gates;
}

std::vector<int> seeded_permutation(int n, std::uint64_t seed) {
  std::vector<int> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(seed);
  for (int i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::size_t>(uniform_below(rng, static_cast<std::uint64_t>(i) + 1));
    std::swap(perm[static_cast<std::size_t>(i)], perm[j]);
  }
  return perm;
}

}  // namespace attngeom::prune
