// attngeom prune's pure policies (src/prune): masking orders, fractions, the seeded
// permutation, the top-N key apportionment and the kept-key share, on hand-computed cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "prune/held_out.h"
#include "prune/strategy.h"
#include "prune/topn_policy.h"
#include "util/error.h"

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
  EXPECT_EQ(heads_for_fraction(0.3, 5), 2);       // 1.4999999999999998 is meant as 1.5
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
  EXPECT_EQ(order("entropy"), (std::vector<int>{0, 3, 2, 1}));  // most diffuse first
  EXPECT_EQ(order("entropy-rev"), (std::vector<int>{1, 2, 3, 0}));
  EXPECT_EQ(order("sink"), (std::vector<int>{1, 3, 0, 2}));    // most sink mass first
  EXPECT_EQ(order("last"), (std::vector<int>{1, 3, 0, 2}));    // least a_L first
  EXPECT_EQ(order("fscore"), (std::vector<int>{3, 0, 1, 2}));  // lowest F first, NaN last
}

TEST(PruneOrder, TypeIsTheSeedsRandomOrderStablyGroupedByType) {
  HeadTable t;
  t.grid = {3, 4};
  t.label = {"retriever", "mixer",        "mixer", "unclassified", "reset",        "mixer",
             "retriever", "unclassified", "reset", "mixer",        "unclassified", "retriever"};
  for (const std::string& order_text :
       {std::string("unclassified,mixer,reset,retriever"), std::string("retriever,reset,mixer,unclassified")}) {
    const std::vector<std::string> type_order = parse_type_order(order_text);
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      std::vector<int> want = masking_order(importance(parse_strategies("random")[0], t, type_order, seed));
      std::stable_sort(want.begin(), want.end(), [&](int a, int b) {
        const auto rank = [&](int i) {
          return std::find(type_order.begin(), type_order.end(), t.label[i]) - type_order.begin();
        };
        return rank(a) < rank(b);
      });
      EXPECT_EQ(masking_order(importance(parse_strategies("type")[0], t, type_order, seed)), want)
          << order_text << " " << seed;
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

// Pairs kept by `n` under `kept`, the brute-force way: a query with k visible keys keeps min(n, k).
double brute_pairs(const std::vector<int>& n, const std::vector<int>& windows, int sliding_window) {
  double sum = 0;
  for (const int length : windows) {
    for (int i = 0; i < length; ++i) {
      const int keys = sliding_window > 0 ? std::min(i + 1, sliding_window) : i + 1;
      for (const int x : n) sum += x > 0 ? std::min(x, keys) : keys;
    }
  }
  return sum;
}

TEST(TopnBudget, KeptKeysCountsVisibleKeys) {
  // One window of 4 tokens: queries see 1, 2, 3, 4 keys; N = 2 keeps 1, 2, 2, 2 of them.
  const KeptKeys one(std::vector<int>{4}, 0);
  EXPECT_EQ(one.of(2), 7.0);
  EXPECT_EQ(one.of(0), 10.0);
  EXPECT_EQ(one.max_visible(), 4);
  EXPECT_DOUBLE_EQ(one.share(std::vector<int>{2}), 7.0 / 10.0);
  // N = 0 keeps all; a sliding window of 2 caps every query at 2 keys.
  EXPECT_DOUBLE_EQ(KeptKeys(std::vector<int>{4}, 2).share(std::vector<int>{2, 0}), 1.0);
  EXPECT_DOUBLE_EQ(KeptKeys(std::vector<int>{4, 2}, 0).share(std::vector<int>{1}), 6.0 / 13.0);
  const std::vector<int> windows = {40, 17, 40, 3};
  for (const int window : {0, 9, 64}) {
    const KeptKeys kept(windows, window);
    for (int n = 0; n <= 45; ++n) EXPECT_EQ(kept.of(n), brute_pairs({n}, windows, window)) << n << " " << window;
  }
}

TEST(TopnBudget, GeometricKeepsUniformsPairsAndServesSmallNeedsFirst) {
  const std::vector<int> windows = {40, 40, 23};
  for (const int window : {0, 16}) {
    const KeptKeys kept(windows, window);
    const int most = kept.max_visible();
    const std::vector<double> base = {2, 3, 64, 5, 1, 12, 12, 128};
    for (int budget = 1; budget <= 45; ++budget) {
      const std::vector<int> n = allocate_topn(base, budget, kept);
      const std::vector<int> uniform(base.size(), budget);
      const double target = brute_pairs(uniform, windows, window);
      const double spent = brute_pairs(n, windows, window);
      EXPECT_LE(spent, target) << budget;
      for (std::size_t h = 0; h < base.size(); ++h) {
        EXPECT_TRUE(n[h] >= 1 && n[h] <= most);
        for (std::size_t j = 0; j < base.size(); ++j) {
          if (base[h] < base[j]) {
            EXPECT_LE(n[h], n[j]) << "a larger base never gets fewer keys; budget " << budget;
          }
        }
        // No head below its need (or one short of the others' level) could take one more key.
        if (n[h] < most) {
          std::vector<int> more = n;
          ++more[h];
          const bool starved = n[h] < std::min(static_cast<int>(base[h]), most);
          if (starved) {
            EXPECT_GT(brute_pairs(more, windows, window), target) << "head " << h << " budget " << budget;
          }
        }
      }
      // While some head is short of its need, heads that need little get what they need
      // once the budget covers it.
      bool short_somewhere = false;
      for (std::size_t h = 0; h < base.size(); ++h) short_somewhere |= n[h] < std::min(static_cast<int>(base[h]), most);
      if (budget >= 5 && short_somewhere) {
        EXPECT_EQ(n[0], 2);
        EXPECT_EQ(n[1], 3);
        EXPECT_EQ(n[4], 1);
      }
    }
    // Equal needs: the uniform N; a budget past the longest row keeps every key.
    EXPECT_EQ(allocate_topn(std::vector<double>{7, 7, 7}, 5, kept), (std::vector<int>{5, 5, 5}));
    EXPECT_EQ(allocate_topn(base, most + 3, kept), std::vector<int>(base.size(), most));
  }
  // Within one step of one head: 3 heads, one window of 10 tokens, needs {1, 10, 10}, budget 4.
  // Uniform keeps 3 x 34 = 102 pairs; need-1 head keeps 10, so 92 for the other two: 6 each
  // (2 x 45 = 90 <= 92), 7 would be 2 x 49 = 98 > 92.
  EXPECT_EQ(allocate_topn(std::vector<double>{1, 10, 10}, 4, KeptKeys(std::vector<int>{10}, 0)),
            (std::vector<int>{1, 6, 6}));
}

// The held-out reference distributions ([tokens, vocab] floats) must fit before any forward.
TEST(HeldOutMemory, ReferenceThatDoesNotFitNamesMaxTokensAndHowManyFit) {
  EXPECT_EQ(reference_distribution_bytes(1000, 32000), 128000000u);
  EXPECT_NO_THROW(check_reference_fits(1000, 32000, std::nullopt));  // unknown: passes
  EXPECT_NO_THROW(check_reference_fits(1000, 32000, 128000000u));    // exactly fits
  try {
    check_reference_fits(1000, 32000, 127999999u);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("1000 held-out tokens"), std::string::npos) << what;
    EXPECT_NE(what.find("use max_tokens (at most 999)"), std::string::npos)
        << what;  // the setting, which the CLI shows as --max-tokens
  }
  EXPECT_EQ(reference_distribution_bytes(std::size_t{1} << 62, 256000), UINT64_MAX);  // saturates
}

}  // namespace
}  // namespace attngeom::prune
