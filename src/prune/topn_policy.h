#pragma once
// Token-level top-N budgets (SPEC section 7, beyond the paper): each head keeps only
// its top-N keys per query. A geometric policy sets N per head from the analyze run's
// selection curves; the uniform policy gives every head the same N; both spend the
// same total number of kept keys (budget x heads). Rules in docs/prune.md.
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

// Integer N per head, each in [1, max_n], summing exactly to `total`, proportional to
// `base` where the bounds allow (water-filling, then largest remainders; ties to the
// lower index). Equal bases give equal N when total / heads is an integer.
std::vector<int> apportion_keys(std::span<const double> base, long total, int max_n);

// Share of all (head, query, visible key) triples that top-N keeps, over forward passes
// of `window_lengths` tokens each: sum over heads and queries of min(N, visible) /
// (heads x visible keys); N = 0 keeps all. `sliding_window` 0 means full causal.
double kept_key_share(std::span<const int> topn, std::span<const int> window_lengths, int sliding_window);

}  // namespace attngeom::prune
