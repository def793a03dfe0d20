// attngeom prune's pure policies (src/prune): masking orders, fractions, the seeded
// permutation, the top-N key apportionment and the kept-key share, on hand-computed cases.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "prune/strategy.h"
#include "prune/topn_policy.h"

namespace attngeom::prune {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

TEST(PruneOrder, AscendingTiesToLowerIndexNanLast) {
  const std::vector<double> score = {0.5, kNan, 0.1, 0.5, -1.0, kNan, 0.1};
  EXPECT_EQ(masking_order(score), (std::vector<int>{4, 2, 6, 0, 3, 1, 5}));
}

TEST(PruneOrder, HeadsForFractionRoundsHalvesUp) {
  EXPECT_EQ(heads_for_fraction(0.0, 8), 0);
  EXPECT_EQ(heads_for_fraction(0.05, 8), 0);  // 0.4
  EXPECT_EQ(heads_for_fraction(0.25, 8), 2);
  EXPECT_EQ(heads_for_fraction(0.3, 5), 2);   // 1.4999999999999998 is meant as 1.5
  EXPECT_EQ(heads_for_fraction(0.05, 1024), 51);  // 51.2
  EXPECT_EQ(heads_for_fraction(1.0, 7), 7);
}

TEST(PruneOrder, GatesMaskTheFirstK) {
  EXPECT_EQ(gates_masking_first(std::vector<int>{2, 0, 1, 3}, 2), (std::vector<float>{0, 1, 0, 1}));
}

TEST(PruneOrder, StrategyDirectionsFollowTheDocs) {
  HeadTable t;
  t.grid = {2, 2};
  t.entropy = {0.9, 0.1, 0.5, 0.7};
  t.sink_mass = {0.2, 0.8, 0.1, 0.6};
  t.last_mass = {0.3, 0.05, 0.6, 0.2};
  t.f_small = {0.4, 0.9, kNan, 0.1};
  const auto order = [&](const std::string& name) {
    return masking_order(importance(parse_strategies(name)[0], t, default_type_order(), 0));
  };
  EXPECT_EQ(order("entropy"), (std::vector<int>{0, 3, 2, 1}));      // most diffuse first
  EXPECT_EQ(order("entropy-rev"), (std::vector<int>{1, 2, 3, 0}));
  EXPECT_EQ(order("sink"), (std::vector<int>{1, 3, 0, 2}));         // most sink mass first
  EXPECT_EQ(order("last"), (std::vector<int>{1, 3, 0, 2}));         // least a_L first
  EXPECT_EQ(order("fscore"), (std::vector<int>{3, 0, 1, 2}));       // lowest F first, NaN last
}

TEST(PruneOrder, TypeIsTheSeedsRandomOrderStablyGroupedByType) {
  HeadTable t;
  t.grid = {3, 4};
  t.label = {"retriever", "mixer", "mixer", "unclassified", "reset", "mixer",
             "retriever", "unclassified", "reset", "mixer", "unclassified", "retriever"};
  for (const std::string& order_text : {std::string("unclassified,mixer,reset,retriever"),
                                        std::string("retriever,reset,mixer,unclassified")}) {
    const std::vector<std::string> type_order = parse_type_order(order_text);
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      std::vector<int> want = masking_order(importance(parse_strategies("random")[0], t, type_order, seed));
      std::stable_sort(want.begin(), want.end(), [&](int a, int b) {
        const auto rank = [&](int i) { return std::find(type_order.begin(), type_order.end(), t.label[i]) - type_order.begin(); };
        return rank(a) < rank(b);
      });
      EXPECT_EQ(masking_order(importance(parse_strategies("type")[0], t, type_order, seed)), want) << order_text << " " << seed;
    }
  }
}

TEST(PruneOrder, SeededPermutationIsPinnedAndSeedDependent) {
  // Pinned: mt19937_64 is fully specified and the shuffle is ours, so every platform
  // and standard library gives these orders.
  EXPECT_EQ(seeded_permutation(10, 0), (std::vector<int>{7, 2, 0, 8, 3, 9, 6, 1, 5, 4}));
  EXPECT_EQ(seeded_permutation(10, 1), (std::vector<int>{1, 7, 3, 9, 4, 0, 5, 2, 6, 8}));
  std::vector<int> p = seeded_permutation(1000, 42);
  std::sort(p.begin(), p.end());
  std::vector<int> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(p, identity);
}

TEST(PruneOrder, ParsingRejectsUnknownAndDuplicates) {
  EXPECT_THROW(parse_strategies("entropy,bogus"), std::exception);
  EXPECT_THROW(parse_strategies("sink,sink"), std::exception);
  EXPECT_THROW(parse_strategies("random-rev"), std::exception);
  EXPECT_THROW(parse_strategies(""), std::exception);
  EXPECT_THROW(parse_type_order("mixer,reset,retriever"), std::exception);
  EXPECT_EQ(parse_strategies("type,fscore-rev")[1].name(), "fscore-rev");
}

TEST(TopnBudget, ApportionIsExactBoundedAndProportional) {
  EXPECT_EQ(apportion_keys(std::vector<double>{3, 3, 3}, 12, 64), (std::vector<int>{4, 4, 4}));  // equal: uniform
  EXPECT_EQ(apportion_keys(std::vector<double>{1, 2, 4, 1}, 16, 64), (std::vector<int>{2, 4, 8, 2}));
  EXPECT_EQ(apportion_keys(std::vector<double>{1, 100}, 20, 16), (std::vector<int>{4, 16}));   // cap, rest flows
  EXPECT_EQ(apportion_keys(std::vector<double>{1, 1000}, 10, 9), (std::vector<int>{1, 9}));    // floor of 1
  EXPECT_EQ(apportion_keys(std::vector<double>{1, 1, 1}, 4, 8), (std::vector<int>{2, 1, 1}));   // remainder: lower index
  EXPECT_EQ(apportion_keys(std::vector<double>{2, 5, 7}, 3 * 9, 9), (std::vector<int>{9, 9, 9}));  // budget = max
  const std::vector<double> base = {2, 3, 64, 5, 1, 12, 12, 128};
  for (long total = 8; total <= 8 * 40; ++total) {
    const std::vector<int> n = apportion_keys(base, total, 40);
    EXPECT_EQ(std::accumulate(n.begin(), n.end(), 0L), total);
    for (const int x : n) EXPECT_TRUE(x >= 1 && x <= 40);
    for (std::size_t i = 0; i < base.size(); ++i) {
      for (std::size_t j = 0; j < base.size(); ++j) {
        if (base[i] < base[j]) {
          EXPECT_LE(n[i], n[j]) << "a larger base never gets fewer keys; total " << total;
        }
      }
    }
  }
}

TEST(TopnBudget, KeptShareCountsVisibleKeys) {
  // One window of 4 tokens: queries see 1, 2, 3, 4 keys; N = 2 keeps 1, 2, 2, 2 of them.
  EXPECT_DOUBLE_EQ(kept_key_share(std::vector<int>{2}, std::vector<int>{4}, 0), 7.0 / 10.0);
  // N = 0 keeps all; a sliding window of 2 caps every query at 2 keys.
  EXPECT_DOUBLE_EQ(kept_key_share(std::vector<int>{2, 0}, std::vector<int>{4}, 2), 1.0);
  EXPECT_DOUBLE_EQ(kept_key_share(std::vector<int>{1}, std::vector<int>{4, 2}, 0), 6.0 / 13.0);
}

}  // namespace
}  // namespace attngeom::prune
