#include "analysis/outputs.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <span>

#include "analysis/row_fields.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/npy.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;

// Per-row fields written to heads.csv as means over all samples, in this order; then the
// taxonomy's, as means over each sequence's last query row.
const std::vector<std::string> kHeadMeans = {
    "sink_mass", "last_mass", "entropy",  "recency_mass", "topk_mass",          "nu",    "cv", "lambda",
    "rho0",      "beta",      "beta_mae", "beta_r2",      "negative_cos_share", "sigma2"};
const std::vector<std::string> kTaxonomyMeans = {"sink_magnitude", "last_magnitude", "rest_magnitude", "cos_sink_small",
                                                 "cos_sink_large", "cos_last_small", "cos_last_large"};

// Per-N fields with full distributions in selection.csv, then those given as means.
const std::vector<std::string> kDistributed = {"precision", "recall", "f", "f_best", "r_min", "r_max", "margin"};
const std::vector<std::string> kMeanOnly = {"a_in_min",        "a_out_max",          "separated",    "r1_precision_lo",
                                            "r1_precision_hi", "r1_recall_lo",       "r1_recall_hi", "r1_f_lo",
                                            "r1_f_hi",         "r1_inside",          "r1_vacuous",   "r2_recall_lo",
                                            "r2_fp_hi",        "r2_separation_prob", "r2_vacuous",   "r3_certified"};

// A distribution over samples: its column suffixes and values, in one order.
const std::vector<std::string> kSummaryParts = {"mean", "std", "q10", "q25", "q50", "q75", "q90"};
void add_summary(CsvWriter& t, const Summary& s) {
  t.add(s.mean).add(s.std).add(s.q10).add(s.q25).add(s.q50).add(s.q75).add(s.q90);
}

void write_heads(const RunAggregate& run, const fs::path& dir) {
  std::vector<std::string> columns = {"layer", "head", "kv_head", "samples"};
  columns.insert(columns.end(), kHeadMeans.begin(), kHeadMeans.end());
  columns.insert(columns.end(), kTaxonomyMeans.begin(), kTaxonomyMeans.end());
  for (const char* c : {"f_small", "peak_f_n", "label", "kmeans_cluster", "kmeans_label", "flag_negative_margin",
                        "flag_flat_precision", "flag_no_sink"}) {
    columns.push_back(c);
  }
  CsvWriter t(columns);
  for (const HeadAggregate& h : run.heads_table) {
    t.add(h.layer).add(h.head).add(h.kv_head).add(h.samples);
    for (const auto& field : kHeadMeans) t.add(run.row_stat(h, field).mean);
    for (const auto& field : kTaxonomyMeans) t.add(run.last_row_stat(h, field).mean);
    t.add(h.f_small).add(h.peak_f_n).add(std::string(stats::head_type_name(h.rules.label))).add(h.kmeans_cluster);
    t.add(std::string(stats::head_type_name(run.kmeans.cluster_type[h.kmeans_cluster])));
    t.add(static_cast<int>(h.flag_negative_margin)).add(static_cast<int>(h.flag_flat_precision));
    t.add(static_cast<int>(h.flag_no_sink));
    t.end_row();
  }
  t.write(dir / "heads.csv");
}

void write_selection(const RunAggregate& run, const fs::path& dir) {
  std::vector<std::string> columns = {"layer", "head", "kv_head", "n", "samples"};
  for (const auto& m : kDistributed) {
    for (const auto& part : kSummaryParts) columns.push_back(m + "_" + part);
  }
  columns.insert(columns.end(), kMeanOnly.begin(), kMeanOnly.end());
  const std::vector<std::string> radius_fields = normalised_radius_fields();
  columns.insert(columns.end(), radius_fields.begin(), radius_fields.end());
  CsvWriter t(columns);
  for (const HeadAggregate& h : run.heads_table) {
    for (std::size_t g = 0; g < run.schema.n_grid.size(); ++g) {
      t.add(h.layer).add(h.head).add(h.kv_head).add(run.schema.n_grid[g]).add(run.n_stat(h, g, "f").count);
      for (const auto& m : kDistributed) add_summary(t, run.n_stat(h, g, m));
      for (const auto& m : kMeanOnly) t.add(run.n_stat(h, g, m).mean);
      for (const auto& m : radius_fields) t.add(run.n_stat(h, g, m).mean);
      t.end_row();
    }
  }
  t.write(dir / "selection.csv");
}

// docs/method.md section 3: each head's diagnostics as distributions over samples (heads.csv has
// their means), one row per (head, field).
void write_head_stats(const RunAggregate& run, const fs::path& dir) {
  std::vector<std::string> columns = {"layer", "head", "kv_head", "field", "rows", "count"};
  columns.insert(columns.end(), kSummaryParts.begin(), kSummaryParts.end());
  CsvWriter t(columns);
  for (const HeadAggregate& h : run.heads_table) {
    const auto row = [&](const std::string& field, const char* rows, const Summary& s) {
      t.add(h.layer).add(h.head).add(h.kv_head).add(field).add(std::string(rows)).add(s.count);
      add_summary(t, s);
      t.end_row();
    };
    for (const auto& field : kHeadMeans) row(field, "all", run.row_stat(h, field));
    for (const auto& field : kTaxonomyMeans) row(field, "last", run.last_row_stat(h, field));
  }
  t.write(dir / "head_stats.csv");
}

void write_sink_recall(const RunAggregate& run, const fs::path& dir) {
  CsvWriter t({"n", "heads", "pearson", "pearson_lo", "pearson_hi", "spearman", "spearman_lo", "spearman_hi"});
  for (const auto& p : run.sink_recall.points) {
    const auto value = [](const stats::CorrelationEstimate& e, double x) { return e.defined ? x : NAN; };
    t.add(p.n).add(p.heads);
    t.add(value(p.pearson, p.pearson.value))
        .add(value(p.pearson, p.pearson.ci_low))
        .add(value(p.pearson, p.pearson.ci_high));
    t.add(value(p.spearman, p.spearman.value)).add(value(p.spearman, p.spearman.ci_low));
    t.add(value(p.spearman, p.spearman.ci_high));
    t.end_row();
  }
  t.write(dir / "sink_recall.csv");
}

void write_layers(const RunAggregate& run, const fs::path& dir) {
  const std::vector<std::string> means = {"sink_mass", "cv", "lambda", "rho0", "beta", "beta_mae"};
  std::vector<std::string> columns = {"layer",       "heads",       "retriever_share",
                                      "mixer_share", "reset_share", "unclassified_share"};
  columns.insert(columns.end(), means.begin(), means.end());
  columns.push_back("f_small");
  CsvWriter t(columns);
  for (int l = 0; l < run.layers; ++l) {
    const auto& s = run.layer_shares[static_cast<std::size_t>(l)];
    t.add(l).add(run.heads).add(s.retriever).add(s.mixer).add(s.reset).add(s.unclassified);
    const auto begin = run.heads_table.begin() + l * run.heads;
    for (const auto& field : means) {
      double sum = 0;
      for (auto h = begin; h != begin + run.heads; ++h) sum += run.row_stat(*h, field).mean;
      t.add(sum / run.heads);
    }
    double f_small = 0;
    for (auto h = begin; h != begin + run.heads; ++h) f_small += h->f_small;
    t.add(f_small / run.heads);
    t.end_row();
  }
  t.write(dir / "layers.csv");
}

void add_fit(CsvWriter& t, const stats::FourPhaseFit& f) {
  t.add(f.sink_weight).add(f.plateau_level).add(f.oscillation_start).add(f.oscillation_level);
  t.add(f.oscillation_spread).add(f.recency_start).add(f.recency_floor).add(f.recency_amplitude).add(f.recency_rate);
  t.add(f.rmse).add(f.relative_l1).add(static_cast<int>(f.fitted));
}

const std::vector<std::string> kFitColumns = {
    "sink_weight",   "plateau_level",     "plateau_end",  "oscillation_level", "oscillation_spread", "recency_start",
    "recency_floor", "recency_amplitude", "recency_rate", "fit_rmse",          "fit_relative_l1",    "fitted"};

void write_profiles(const RunAggregate& run, const fs::path& dir) {
  std::vector<std::string> columns = {"layer", "head"};
  columns.insert(columns.end(), kFitColumns.begin(), kFitColumns.end());
  CsvWriter fits(columns);
  for (const HeadAggregate& h : run.heads_table) {
    fits.add(h.layer).add(h.head);
    add_fit(fits, h.profile_fit);
    fits.end_row();
  }
  fits.write(dir / "profile_fit.csv");

  CsvWriter layers({"layer", "position", "mean_alpha", "fitted"});
  for (int l = 0; l < run.layers; ++l) {
    const auto& fit = run.layer_profile_fit[static_cast<std::size_t>(l)];
    for (std::size_t t = 0; t < run.seq_len; ++t) {
      layers.add(l).add(t).add(run.layer_profile[static_cast<std::size_t>(l)][t]);
      layers.add(fit.fitted ? fit.curve[t] : NAN);
      layers.end_row();
    }
  }
  layers.write(dir / "profile_layers.csv");
}

void write_arrays(const RunAggregate& run, const fs::path& dir) {
  const std::vector<std::int64_t> shape = {run.layers, run.heads};
  for (const char* field : {"sink_mass", "last_mass", "entropy", "rho0", "lambda", "cv", "beta"}) {
    std::vector<double> values;
    for (const auto& h : run.heads_table) values.push_back(run.row_stat(h, field).mean);
    write_npy(dir / (std::string(field) + ".npy"), values, shape);
  }
  std::vector<double> f_small;
  std::vector<std::int32_t> labels;
  std::vector<double> profile;
  for (const auto& h : run.heads_table) {
    f_small.push_back(h.f_small);
    labels.push_back(static_cast<std::int32_t>(h.rules.label));
    profile.insert(profile.end(), h.profile.begin(), h.profile.end());
  }
  write_npy(dir / "f_small.npy", f_small, shape);
  write_npy(dir / "label.npy", labels, shape);
  write_npy(dir / "attention_profile.npy", profile, {run.layers, run.heads, static_cast<std::int64_t>(run.seq_len)});
}

}  // namespace

void write_tables(const RunAggregate& run, const fs::path& dir) {
  write_heads(run, dir);
  write_head_stats(run, dir);
  write_selection(run, dir);
  write_sink_recall(run, dir);
  write_layers(run, dir);
  write_profiles(run, dir);
  write_arrays(run, dir);
}

void write_per_sequence_table(const std::vector<fs::path>& record_files, int kv_heads, const fs::path& path) {
  CsvWriter t({"seq", "layer", "head", "kv_head", "query", "n", "precision", "recall", "f", "r_min", "r_max"});
  std::vector<std::unique_ptr<RecordReader>> readers;
  for (const auto& file : record_files) readers.push_back(std::make_unique<RecordReader>(file));
  std::sort(readers.begin(), readers.end(), [](const auto& a, const auto& b) { return a->sequence() < b->sequence(); });
  for (const auto& r : readers) {
    const RecordSchema& s = r->schema();
    const std::size_t kn = s.per_n_fields.size(), g_count = s.n_grid.size();
    const std::size_t fields[] = {s.per_n_index("precision"), s.per_n_index("recall"), s.per_n_index("f"),
                                  s.per_n_index("r_min"), s.per_n_index("r_max")};
    for (int l = 0; l < r->layers(); ++l) {
      for (int h = 0; h < r->heads(); ++h) {
        const auto per_n = r->per_n(l, h);
        for (std::size_t q = 0; q < r->rows(); ++q) {
          for (std::size_t g = 0; g < g_count; ++g) {
            const double* m = per_n.data() + (q * g_count + g) * kn;
            if (std::isnan(m[fields[0]])) continue;  // N beyond this row's keys
            t.add(r->sequence()).add(l).add(h).add(h / (r->heads() / kv_heads)).add(r->query_positions()[q]);
            t.add(s.n_grid[g]);
            for (const std::size_t f : fields) t.add(m[f]);
            t.end_row();
          }
        }
      }
    }
  }
  t.write(path);
}

void write_routing_tables(const std::vector<fs::path>& record_files, const fs::path& dir) {
  int layers = 0, experts = 0;
  std::vector<std::int64_t> load;    // [layers, experts]
  std::vector<std::int64_t> tokens;  // [layers] tokens routed
  std::vector<std::int64_t> flips;   // [layers]; -1 once any sequence went unchecked
  for (const auto& file : record_files) {
    const RecordReader r(file);
    if (load.empty()) {
      if (r.experts() == 0) return;  // a dense model
      layers = r.layers();
      experts = r.experts();
      load.assign(static_cast<std::size_t>(layers) * static_cast<std::size_t>(experts), 0);
      tokens.assign(static_cast<std::size_t>(layers), 0);
      flips.assign(static_cast<std::size_t>(layers), 0);
    }
    ATTNGEOM_CHECK(r.layers() == layers && r.experts() == experts);
    for (int l = 0; l < layers; ++l) {
      const auto layer = static_cast<std::size_t>(l);
      const std::span<const std::int32_t> counts = r.expert_load(l);
      for (int e = 0; e < experts; ++e)
        load[layer * static_cast<std::size_t>(experts) + static_cast<std::size_t>(e)] +=
            counts[static_cast<std::size_t>(e)];
      tokens[layer] += static_cast<std::int64_t>(r.seq_len());
      const std::int32_t f = r.routing_flips(l);
      flips[layer] = f < 0 || flips[layer] < 0 ? -1 : flips[layer] + f;
    }
  }
  if (load.empty()) return;
  CsvWriter by_expert({"layer", "expert", "tokens", "share"});
  CsvWriter by_layer({"layer", "tokens", "routing_flips"});
  for (int l = 0; l < layers; ++l) {
    const auto layer = static_cast<std::size_t>(l);
    const auto begin = load.begin() + static_cast<std::ptrdiff_t>(layer * static_cast<std::size_t>(experts));
    const std::int64_t choices = std::accumulate(begin, begin + experts, std::int64_t{0});
    if (choices == 0) continue;  // a dense layer
    for (int e = 0; e < experts; ++e) {
      const std::int64_t n = begin[e];
      by_expert.add(l)
          .add(e)
          .add(static_cast<std::size_t>(n))
          .add(static_cast<double>(n) / static_cast<double>(choices));
      by_expert.end_row();
    }
    by_layer.add(l).add(static_cast<std::size_t>(tokens[layer]));
    if (flips[layer] < 0) {
      by_layer.add(std::string());
    } else {
      by_layer.add(static_cast<std::size_t>(flips[layer]));
    }
    by_layer.end_row();
  }
  by_expert.write(dir / "experts.csv");
  by_layer.write(dir / "routing.csv");
}

}  // namespace attngeom
