#include "interop/compare.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "util/csv.h"

namespace attngeom::interop {

namespace {

// The top `k` heads by score, highest first; NaN last, ties to the lower flat index.
std::vector<bool> top_k(const std::vector<double>& score, std::size_t k) {
  std::vector<std::size_t> order(score.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto key = [&](std::size_t i) { return std::isnan(score[i]) ? -INFINITY : score[i]; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) > key(b); });
  std::vector<bool> set(score.size(), false);
  for (std::size_t r = 0; r < k && r < order.size(); ++r) set[order[r]] = true;
  return set;
}

ComparisonRow overlap_row(const std::vector<bool>& ours, const ImportedHeadSet& theirs) {
  ComparisonRow row;
  row.heads = ours.size();
  std::size_t either = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    row.our_set += ours[i];
    row.their_set += theirs.member[i];
    row.overlap += ours[i] && theirs.member[i];
    either += ours[i] || theirs.member[i];
  }
  row.jaccard = either ? static_cast<double>(row.overlap) / static_cast<double>(either) : NAN;
  row.precision_at_k = row.our_set ? static_cast<double>(row.overlap) / static_cast<double>(row.our_set) : NAN;
  return row;
}

std::size_t distinct_values(const std::vector<double>& score) {
  std::vector<double> finite;
  for (const double x : score) {
    if (std::isfinite(x)) finite.push_back(x);
  }
  std::sort(finite.begin(), finite.end());
  return static_cast<std::size_t>(std::unique(finite.begin(), finite.end()) - finite.begin());
}

// Why a row is degenerate: sets equal by construction, or a correlation that a constant or
// heavily tied score leaves undefined or coarse. Empty when nothing is.
std::string caveat(const ComparisonRow& row, bool top_k_set, const std::vector<double>& ours,
                   const ImportedHeadSet& theirs) {
  std::vector<std::string> why;
  if (top_k_set && (row.their_set == 0 || row.their_set == row.heads)) {
    why.push_back(std::string("their set holds ") + (row.their_set == 0 ? "no head" : "every head") +
                  ", so our top-|S| set is the same by construction: jaccard and precision_at_k say nothing");
  }
  const std::size_t their_values = distinct_values(theirs.score), our_values = distinct_values(ours);
  if (their_values <= 1) {
    why.push_back("spearman undefined: their scores are constant");
  } else if (our_values <= 1) {
    why.push_back("spearman undefined: our " + row.ours + " is constant");
  } else if (2 * their_values < row.heads && theirs.format != HeadSetFormat::kQrheadYaml) {
    // A listed / not-listed file is a split by design; a score with few values is tied.
    why.push_back("spearman coarse: their " + std::to_string(row.heads) + " scores take only " +
                  std::to_string(their_values) + " distinct values (ties" +
                  (theirs.format == HeadSetFormat::kDuo ? ": one gate per KV head" : std::string()) + ")");
  }
  std::string text;
  for (const std::string& w : why) text += (text.empty() ? "" : "; ") + w;
  return text;
}

}  // namespace

std::vector<ComparisonRow> compare_head_sets(const RunHeads& run, const std::vector<std::string>& files,
                                             const std::vector<ImportedHeadSet>& sets,
                                             const stats::BootstrapOptions& bootstrap, std::uint64_t seed) {
  std::vector<ComparisonRow> rows;
  for (std::size_t f = 0; f < sets.size(); ++f) {
    const ImportedHeadSet& theirs = sets[f];
    const auto their_size = static_cast<std::size_t>(std::count(theirs.member.begin(), theirs.member.end(), true));
    auto add = [&](const std::string& ours, const std::vector<double>& score, const std::vector<bool>& our_set,
                   bool top_k_set) {
      ComparisonRow row = overlap_row(our_set, theirs);
      row.file = files[f];
      row.format = format_name(theirs.format);
      row.ours = ours;
      row.spearman = stats::spearman_bootstrap(score, theirs.score, bootstrap, seed);
      row.caveat = caveat(row, top_k_set, score, theirs);
      rows.push_back(std::move(row));
    };
    for (const std::string& name : score_names())
      add("score:" + name, run.score(name), top_k(run.score(name), their_size), true);
    for (const std::string& type : type_names()) {
      const std::vector<double> indicator = run.type_indicator(type);
      std::vector<bool> set(indicator.size());
      for (std::size_t i = 0; i < set.size(); ++i) set[i] = indicator[i] == 1.0;
      add("type:" + type, indicator, set, false);
    }
  }
  return rows;
}

void write_comparison_csv(const std::filesystem::path& path, const std::vector<ComparisonRow>& rows) {
  CsvWriter t({"file", "format", "ours", "heads", "their_set", "our_set", "overlap", "jaccard", "precision_at_k",
               "spearman", "spearman_lo", "spearman_hi"});
  const double nan = NAN;
  for (const ComparisonRow& r : rows) {
    t.add(r.file).add(r.format).add(r.ours).add(r.heads).add(r.their_set).add(r.our_set).add(r.overlap);
    t.add(r.jaccard).add(r.precision_at_k);
    t.add(r.spearman.defined ? r.spearman.value : nan).add(r.spearman.defined ? r.spearman.ci_low : nan);
    t.add(r.spearman.defined ? r.spearman.ci_high : nan);
    t.end_row();
  }
  t.write(path);
}

}  // namespace attngeom::interop
