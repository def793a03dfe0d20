#pragma once
// Token-level top-N budgets (docs/method.md section 7, beyond the paper): each head keeps only
// its top-N keys per query. A geometric policy sets N per head from the analyze run's
// selection curves; the uniform policy gives every head the same N; both keep the same
// number of (query, key) pairs, up to one step of one head. Rules in docs/prune.md.
#include <filesystem>
#include <span>
#include <vector>

#include "prune/head_table.h"

namespace attngeom::prune {

enum class TopnRule {
  kTau,   // the smallest grid N >= 2 whose mean F reaches tau (else the largest grid N)
  kPeak,  // peak_f_n: the non-trivial N with the highest mean F (NaN: 1)
};

struct TopnRuleOptions {
  TopnRule rule = TopnRule::kTau;
  double tau = 0.9;
};

// The rule's N per head, [layers, heads], each >= 1: the relative allocation that the
// geometric policy scales to a budget. Reads RUN_DIR/selection.csv for kTau.
std::vector<double> geometric_base_n(const std::filesystem::path& run_dir, const HeadTable& table,
                                     const TopnRuleOptions& options);

// The (query, key) pairs one head keeps under top-N over forward passes of
// `window_lengths` tokens: the sum over queries of min(N, visible keys). `sliding_window`
// 0 means full causal.
class KeptKeys {
 public:
  KeptKeys(std::span<const int> window_lengths, int sliding_window);
  double of(int n) const;                                                 // n = 0: all visible pairs
  int max_visible() const { return static_cast<int>(kept_.size()) - 1; }  // a larger N keeps nothing more
  // Share of all (head, query, visible key) triples that `topn` ([layers, heads], 0 = all) keeps.
  double share(std::span<const int> topn) const;

 private:
  std::vector<double> kept_;  // [n]: pairs kept by top-n, n = 0..max_visible
};

// The geometric policy's N per head at `budget` (the uniform policy's N), spending the same
// kept pairs as uniform: a common level rises and each head gets min(base_h, level), so a
// head never gets more than its base needs while others are short; once every head has its
// base, the level lifts the rest. Every N lies in [1, max_visible]. The level is the highest
// whose kept pairs do not exceed uniform's; then heads go one level up, largest base first
// (ties: lower index), while the pairs still fit (docs/prune.md). Equal bases give the uniform N.
std::vector<int> allocate_topn(std::span<const double> base, int budget, const KeptKeys& kept);

}  // namespace attngeom::prune
