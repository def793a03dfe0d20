#include "report/report_data.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "report/synth_data.h"
#include "util/error.h"

namespace attngeom::report {

namespace {

using nlohmann::json;

// A column-oriented table under construction.
class TableBuilder {
 public:
  explicit TableBuilder(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  void add(json row) {
    ATTNGEOM_CHECK(row.size() == columns_.size());
    rows_.push_back(std::move(row));
  }
  json build() && { return json{{"columns", std::move(columns_)}, {"rows", std::move(rows_)}}; }

 private:
  std::vector<std::string> columns_;
  json rows_ = json::array();
};

json number_or_null(std::optional<double> v) { return v ? json(*v) : json(nullptr); }
json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

struct MetricColumns {
  const char* name;  // display name
  const char* mean;
  const char* lo;
  const char* hi;
};
constexpr MetricColumns kSelectionMetrics[] = {
    {"Precision", "precision_mean", "r1_precision_lo", "r1_precision_hi"},
    {"Recall", "recall_mean", "r1_recall_lo", "r1_recall_hi"},
    {"F", "f_mean", "r1_f_lo", "r1_f_hi"},
};

void sink_recall_rows(const RunData& run, TableBuilder& t) {
  const CsvTable& s = run.sink_recall;
  const std::size_t n = s.column("n"), heads = s.column("heads");
  for (const char* method : {"pearson", "spearman"}) {
    const std::string m(method);
    const std::size_t r = s.column(m), lo = s.column(m + "_lo"), hi = s.column(m + "_hi");
    const char* display = m == "pearson" ? "Pearson" : "Spearman";
    for (std::size_t i = 0; i < s.rows(); ++i) {
      t.add({run.label, s.integer(i, n), display, number_or_null(s.number(i, r)), number_or_null(s.number(i, lo)),
             number_or_null(s.number(i, hi)), s.integer(i, heads)});
    }
  }
}

const std::vector<std::string> kHeadNumeric = {
    "sink_mass",      "last_mass",      "entropy",        "rho0",          "cv",
    "lambda",         "beta",           "beta_mae",       "f_small",       "peak_f_n",
    "cos_sink_small", "cos_sink_large", "cos_last_small", "cos_last_large"};
const std::vector<std::string> kFlags = {"flag_negative_margin", "flag_flat_precision", "flag_no_sink"};

void head_rows(const RunData& run, TableBuilder& t) {
  const CsvTable& h = run.heads;
  const std::size_t layer = h.column("layer"), head = h.column("head"), kv = h.column("kv_head");
  const std::size_t label = h.column("label"), kmeans = h.column("kmeans_label");
  std::vector<std::size_t> numeric, flags;
  for (const auto& c : kHeadNumeric) numeric.push_back(h.column(c));
  for (const auto& c : kFlags) flags.push_back(h.column(c));
  for (std::size_t i = 0; i < h.rows(); ++i) {
    json row = {run.label,        h.integer(i, layer), h.integer(i, head),
                h.integer(i, kv), h.text(i, label),    h.text(i, kmeans)};
    for (std::size_t c : numeric) row.push_back(number_or_null(h.number(i, c)));
    for (std::size_t c : flags) {
      const long f = h.integer(i, c);
      if (f != 0 && f != 1) {
        throw InputError(h.path().string() + ":" + std::to_string(h.line_of(i)) + ": column '" + h.header()[c] +
                         "': must be 0 or 1, found '" + h.text(i, c) + "'");
      }
      row.push_back(f);
    }
    t.add(std::move(row));
  }
}

const char* const kLabels[] = {"retriever", "mixer", "reset", "unclassified"};

void layer_share_rows(const RunData& run, TableBuilder& t) {
  const CsvTable& l = run.layers;
  const std::size_t layer = l.column("layer");
  for (std::size_t i = 0; i < l.rows(); ++i) {
    for (const char* label : kLabels) {
      t.add({run.label, l.integer(i, layer), label,
             number_or_null(l.number(i, l.column(std::string(label) + "_share")))});
    }
  }
}

// Per head: rho0 and mean Recall at the N where the Pearson correlation between them
// peaks (the seed's sink/Recall link, one point per head). Nothing if it never is defined.
void sink_scatter_rows(const RunData& run, const json& summary, TableBuilder& t) {
  const json& peak = summary["corr_peak"]["pearson"];
  if (peak.is_null()) return;
  const long peak_n = peak["n"].get<long>();
  const CsvTable& s = run.selection;
  const std::size_t layer_s = s.column("layer"), head_s = s.column("head"), n = s.column("n"),
                    recall = s.column("recall_mean");
  std::map<std::pair<long, long>, double> recall_at_peak;
  for (std::size_t i = 0; i < s.rows(); ++i) {
    if (s.integer(i, n) == peak_n) recall_at_peak[{s.integer(i, layer_s), s.integer(i, head_s)}] = s.number(i, recall);
  }
  const CsvTable& h = run.heads;
  const std::size_t layer = h.column("layer"), head = h.column("head"), label = h.column("label"),
                    rho0 = h.column("rho0");
  for (std::size_t i = 0; i < h.rows(); ++i) {
    const auto it = recall_at_peak.find({h.integer(i, layer), h.integer(i, head)});
    if (it == recall_at_peak.end()) continue;
    t.add({run.label, h.integer(i, layer), h.integer(i, head), h.text(i, label), peak_n,
           number_or_null(h.number(i, rho0)), number_or_null(it->second)});
  }
}

// Rows with a non-positive or undefined value are dropped: the profile is drawn on a log scale.
void profile_rows(const RunData& run, TableBuilder& t) {
  const CsvTable& p = run.profile_layers;
  const std::size_t layer = p.column("layer"), pos = p.column("position");
  const std::size_t measured = p.column("mean_alpha"), fitted = p.column("fitted");
  for (std::size_t i = 0; i < p.rows(); ++i) {
    const long l = p.integer(i, layer), x = p.integer(i, pos);
    for (const auto& [col, series] : {std::pair{measured, "measured"}, std::pair{fitted, "four-phase fit"}}) {
      const double v = p.number(i, col);
      if (std::isfinite(v) && v > 0) t.add({run.label, l, x, series, v});
    }
  }
}

void length_sweep_rows(const RunData& run, TableBuilder& t) {
  const CsvTable& s = *run.length_sweep;
  const std::size_t len = s.column("seq_len"), n = s.column("n");
  const std::pair<const char*, const char*> metrics[] = {{"precision_mean", "Precision"},
                                                         {"recall_mean", "Recall"},
                                                         {"f_mean", "F"},
                                                         {"separated_mean", "Separated share"}};
  for (std::size_t i = 0; i < s.rows(); ++i) {
    for (const auto& [col, name] : metrics) {
      t.add({run.label, s.integer(i, len), s.integer(i, n), name, number_or_null(s.number(i, s.column(col)))});
    }
  }
}

// Per (strategy, fraction, metric): mean, min and max over seeds.
void pruning_rows(const RunData& run, TableBuilder& t) {
  const CsvTable& p = *run.pruning;
  const std::size_t strategy = p.column("strategy"), seed = p.column("seed"), fraction = p.column("fraction");
  const std::pair<const char*, const char*> metrics[] = {
      {"ppl", "Perplexity"}, {"kl", "KL from unpruned"}, {"top1", "Top-1 agreement"}};
  std::map<std::tuple<std::string, double, std::string>, std::vector<double>> groups;
  std::vector<std::tuple<std::string, double, std::string>> order;
  for (std::size_t i = 0; i < p.rows(); ++i) {
    (void)p.integer(i, seed);  // validated, not displayed
    for (const auto& [col, name] : metrics) {
      const auto key = std::make_tuple(p.text(i, strategy), p.number(i, fraction), std::string(name));
      auto [it, inserted] = groups.try_emplace(key);
      if (inserted) order.push_back(key);
      it->second.push_back(p.number(i, p.column(col)));
    }
  }
  for (const auto& key : order) {
    const auto& v = groups[key];
    const auto mn = finite_quantile(v, 0.0), mx = finite_quantile(v, 1.0);
    t.add({run.label, std::get<0>(key), std::get<1>(key), std::get<2>(key), number_or_null(finite_mean(v)),
           number_or_null(mn), number_or_null(mx), v.size()});
  }
}

// Per (policy, budget, metric): the value, with the realised kept-key share.
void topn_budget_rows(const RunData& run, TableBuilder& t) {
  const CsvTable& p = *run.topn_budget;
  const std::size_t policy = p.column("policy"), budget = p.column("budget"), kept = p.column("kept_share");
  const std::pair<const char*, const char*> metrics[] = {
      {"ppl", "Perplexity"}, {"kl", "KL from unpruned"}, {"top1", "Top-1 agreement"}};
  for (std::size_t i = 0; i < p.rows(); ++i) {
    for (const auto& [col, name] : metrics) {
      t.add({run.label, p.text(i, policy), p.number(i, budget), number_or_null(p.number(i, kept)), name,
             number_or_null(p.number(i, p.column(col)))});
    }
  }
}

// experts.csv beside routing.csv: each routed layer's tokens per expert, and its routing flips
// with their share of the layer's tokens (null on the fp32 path).
void expert_rows(const RunData& run, TableBuilder& experts, TableBuilder& routing) {
  const CsvTable& e = *run.experts;
  for (std::size_t i = 0; i < e.rows(); ++i) {
    experts.add({run.label, e.integer(i, e.column("layer")), e.integer(i, e.column("expert")),
                 e.integer(i, e.column("tokens")), e.number(i, e.column("share"))});
  }
  if (!run.routing) return;
  const CsvTable& r = *run.routing;
  const std::size_t flips = r.column("routing_flips");
  for (std::size_t i = 0; i < r.rows(); ++i) {
    const long tokens = r.integer(i, r.column("tokens"));
    if (r.text(i, flips).empty()) {
      routing.add({run.label, r.integer(i, r.column("layer")), tokens, nullptr, nullptr});
      continue;
    }
    const long flipped = r.integer(i, flips);
    routing.add({run.label, r.integer(i, r.column("layer")), tokens, flipped,
                 number_or_null(static_cast<double>(flipped) / static_cast<double>(tokens))});
  }
}

// compare.csv as written: one row per (head-set file, our score or type).
void compare_rows(const RunData& run, TableBuilder& t) {
  const CsvTable& c = *run.compare;
  for (std::size_t i = 0; i < c.rows(); ++i) {
    auto number = [&](const char* col) { return number_or_null(c.number(i, c.column(col))); };
    t.add({run.label, c.text(i, c.column("file")), c.text(i, c.column("format")), c.text(i, c.column("ours")),
           c.integer(i, c.column("their_set")), c.integer(i, c.column("our_set")), number("jaccard"),
           number("precision_at_k"), number("spearman"), number("spearman_lo"), number("spearman_hi")});
  }
}

}  // namespace

std::optional<double> finite_mean(std::vector<double> values) {
  double sum = 0;
  std::size_t count = 0;
  for (double v : values) {
    if (std::isfinite(v)) {
      sum += v;
      ++count;
    }
  }
  if (count == 0) return std::nullopt;
  return sum / static_cast<double>(count);
}

std::optional<double> finite_quantile(std::vector<double> values, double q) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

json selection_summary(const RunData& run) {
  const CsvTable& s = run.selection;
  const std::size_t n_col = s.column("n"), inside = s.column("r1_inside");
  std::size_t mean_col[3], lo_col[3], hi_col[3];
  for (int m = 0; m < 3; ++m) {
    mean_col[m] = s.column(kSelectionMetrics[m].mean);
    lo_col[m] = s.column(kSelectionMetrics[m].lo);
    hi_col[m] = s.column(kSelectionMetrics[m].hi);
  }
  struct Acc {
    std::vector<double> mean, lo, hi, inside;
  };
  std::map<std::pair<long, int>, Acc> acc;  // (n, metric index)
  for (std::size_t i = 0; i < s.rows(); ++i) {
    const long n = s.integer(i, n_col);
    for (int m = 0; m < 3; ++m) {
      Acc& a = acc[{n, m}];
      a.mean.push_back(s.number(i, mean_col[m]));
      a.lo.push_back(s.number(i, lo_col[m]));
      a.hi.push_back(s.number(i, hi_col[m]));
      a.inside.push_back(s.number(i, inside));
    }
  }
  TableBuilder t({"run", "n", "metric", "mean", "q25", "q75", "r1_lo", "r1_hi", "r1_inside", "heads"});
  for (const auto& [key, a] : acc) {
    t.add({run.label, key.first, kSelectionMetrics[key.second].name, number_or_null(finite_mean(a.mean)),
           number_or_null(finite_quantile(a.mean, 0.25)), number_or_null(finite_quantile(a.mean, 0.75)),
           number_or_null(finite_mean(a.lo)), number_or_null(finite_mean(a.hi)), number_or_null(finite_mean(a.inside)),
           std::ranges::count_if(a.mean, [](double v) { return std::isfinite(v); })});  // heads it is defined for
  }
  return std::move(t).build();
}

json separation_summary(const RunData& run) {
  // Each series is named by its column (web/js/selection.js gives them their legend): the
  // measured share first, then the two reconstructed certificates.
  static constexpr const char* kSeries[] = {"separated", "r2_separation_prob", "r3_certified"};
  const CsvTable& s = run.selection;
  const std::size_t n_col = s.column("n");
  std::vector<std::size_t> columns;
  for (const char* series : kSeries) columns.push_back(s.column(series));
  std::map<std::pair<long, std::size_t>, std::vector<double>> by_n;  // (n, series) -> one value per head
  for (std::size_t i = 0; i < s.rows(); ++i) {
    for (std::size_t k = 0; k < columns.size(); ++k) by_n[{s.integer(i, n_col), k}].push_back(s.number(i, columns[k]));
  }
  TableBuilder t({"run", "n", "series", "value", "heads"});
  for (const auto& [key, values] : by_n) {
    t.add({run.label, key.first, kSeries[key.second], number_or_null(finite_mean(values)),
           std::ranges::count_if(values, [](double v) { return std::isfinite(v); })});
  }
  return std::move(t).build();
}

json build_report_data(const std::vector<RunData>& runs, const DataOptions& options) {
  TableBuilder selection({"run", "n", "metric", "mean", "q25", "q75", "r1_lo", "r1_hi", "r1_inside", "heads"});
  TableBuilder separation({"run", "n", "series", "value", "heads"});
  TableBuilder sink({"run", "n", "method", "r", "lo", "hi", "heads"});
  TableBuilder scatter({"run", "layer", "head", "label", "n", "rho0", "recall"});
  std::vector<std::string> head_cols = {"run", "layer", "head", "kv_head", "label", "kmeans_label"};
  head_cols.insert(head_cols.end(), kHeadNumeric.begin(), kHeadNumeric.end());
  head_cols.insert(head_cols.end(), kFlags.begin(), kFlags.end());
  TableBuilder heads(head_cols);
  TableBuilder shares({"run", "layer", "label", "share"});
  TableBuilder profile({"run", "layer", "position", "series", "value"});
  TableBuilder sweep({"run", "seq_len", "n", "metric", "value"});
  TableBuilder pruning({"run", "strategy", "fraction", "metric", "mean", "min", "max", "seeds"});
  TableBuilder topn_budget({"run", "policy", "budget", "kept_share", "metric", "value"});
  TableBuilder compare({"run", "file", "format", "ours", "their_set", "our_set", "jaccard", "precision_at_k",
                        "spearman", "spearman_lo", "spearman_hi"});
  TableBuilder experts({"run", "layer", "expert", "tokens", "share"});
  TableBuilder routing({"run", "layer", "tokens", "routing_flips", "flip_share"});
  std::map<std::string, TableBuilder> synth;   // by file name
  std::map<std::string, json> synth_settings;  // by file name: [{run, text}] of drawable files
  json synth_skipped = json::array();
  bool any_sweep = false, any_pruning = false, any_topn = false, any_compare = false, any_experts = false;

  json run_list = json::array();
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const RunData& run = runs[r];
    const json summary = selection_summary(run);
    for (const auto& row : summary["rows"]) selection.add(row);
    const json separated = separation_summary(run);
    for (const auto& row : separated["rows"]) separation.add(row);
    sink_recall_rows(run, sink);
    const json summary_numbers = run_summary(run);
    sink_scatter_rows(run, summary_numbers, scatter);
    head_rows(run, heads);
    layer_share_rows(run, shares);
    profile_rows(run, profile);
    if (run.length_sweep) {
      any_sweep = true;
      length_sweep_rows(run, sweep);
    }
    if (run.pruning) {
      any_pruning = true;
      pruning_rows(run, pruning);
    }
    if (run.topn_budget) {
      any_topn = true;
      topn_budget_rows(run, topn_budget);
    }
    if (run.compare) {
      any_compare = true;
      compare_rows(run, compare);
    }
    if (run.experts) {
      any_experts = true;
      expert_rows(run, experts, routing);
    }
    for (const SynthTable& s : run.synth) {
      auto it =
          synth.try_emplace(s.name, std::vector<std::string>{"run", "profile", "n", "metric", "value", "lo", "hi"})
              .first;
      SynthRows drawn = synth_rows(run.label, s.table);
      if (drawn.metrics.empty()) {
        synth_skipped.push_back({{"run", run.label}, {"file", s.name}});
        continue;
      }
      for (json& row : drawn.rows) it->second.add(std::move(row));
      synth_settings[s.name].push_back({{"run", run.label}, {"text", drawn.settings}});
    }
    run_list.push_back({{"label", run.label},
                        {"dir", std::filesystem::absolute(run.dir).lexically_normal().string()},
                        {"provenance", provenance_rows(run)},
                        {"options", run.run.value("options", json::object())},
                        {"prune_protocol", run.prune_protocol},
                        {"summary", summary_numbers},
                        {"note", r < options.run_notes.size() ? options.run_notes[r] : std::string()}});
  }

  json tables = {{"selection", std::move(selection).build()}, {"separation", std::move(separation).build()},
                 {"sink_recall", std::move(sink).build()},    {"sink_scatter", std::move(scatter).build()},
                 {"heads", std::move(heads).build()},         {"layer_shares", std::move(shares).build()},
                 {"profile", std::move(profile).build()}};
  if (any_sweep) tables["length_sweep"] = std::move(sweep).build();
  if (any_pruning) tables["pruning"] = std::move(pruning).build();
  if (any_topn) tables["topn_budget"] = std::move(topn_budget).build();
  if (any_compare) tables["compare"] = std::move(compare).build();
  if (any_experts) {
    tables["experts"] = std::move(experts).build();
    tables["routing"] = std::move(routing).build();
  }
  json synth_list = json::array();
  for (auto& [name, t] : synth) {
    const auto settings = synth_settings.find(name);
    if (settings != synth_settings.end()) {
      synth_list.push_back({{"file", name}, {"settings", settings->second}, {"table", std::move(t).build()}});
    }
  }
  tables["synth"] = std::move(synth_list);
  return {{"format", "attngeom-report-data-v1"},      {"title", options.title},      {"generator", options.generator},
          {"generated", options.generated},           {"runs", std::move(run_list)}, {"tables", std::move(tables)},
          {"synth_skipped", std::move(synth_skipped)}};
}

}  // namespace attngeom::report
