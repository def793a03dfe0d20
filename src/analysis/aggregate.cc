#include "analysis/aggregate.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "util/error.h"
#include "util/parallel.h"

namespace attngeom {
namespace {

using stats::HeadType;

// flag_no_sink's relative margin below 1 / T: float rounding of a uniform row's mean.
constexpr double kNoSinkSlack = 1e-6;

std::vector<std::unique_ptr<RecordReader>> open_records(const std::vector<std::filesystem::path>& files) {
  if (files.empty()) throw InputError("no finished sequences to aggregate (records/ is empty)");
  std::vector<std::unique_ptr<RecordReader>> readers;
  for (const auto& file : files) readers.push_back(std::make_unique<RecordReader>(file));
  std::sort(readers.begin(), readers.end(), [](const auto& a, const auto& b) { return a->sequence() < b->sequence(); });
  const RecordReader& first = *readers.front();
  for (std::size_t i = 0; i < readers.size(); ++i) {
    const RecordReader& r = *readers[i];
    if (i > 0 && r.sequence() == readers[i - 1]->sequence()) {
      throw InputError("two records for sequence " + std::to_string(r.sequence()) + " (overlapping shards?)");
    }
    if (!(r.schema() == first.schema()) || r.layers() != first.layers() || r.heads() != first.heads() ||
        r.seq_len() != first.seq_len()) {
      throw InputError(r.path().string() + ": record of sequence " + std::to_string(r.sequence()) +
                       " has a different schema or shape than " + first.path().string() +
                       " (records of different runs or versions?)");
    }
  }
  return readers;
}

// Per-head distributions, in sequence then row order.
void summarise_head(const std::vector<std::unique_ptr<RecordReader>>& readers, const RecordSchema& schema,
                    HeadAggregate& h) {
  const std::size_t kr = schema.per_row_fields.size(), kn = schema.per_n_fields.size(), g_count = schema.n_grid.size();
  std::vector<std::vector<double>> row_values(kr), last_row_values(kr), n_values(g_count * kn);
  const std::size_t seq_len = readers.front()->seq_len();
  h.profile.assign(seq_len, 0.0);
  for (const auto& reader : readers) {
    const auto per_row = reader->per_row(h.layer, h.head);  // [Q, Kr]
    const auto per_n = reader->per_n(h.layer, h.head);      // [Q, G, Kn]
    for (std::size_t q = 0; q < reader->rows(); ++q) {
      for (std::size_t k = 0; k < kr; ++k) row_values[k].push_back(per_row[q * kr + k]);
      for (std::size_t i = 0; i < g_count * kn; ++i) n_values[i].push_back(per_n[q * g_count * kn + i]);
    }
    const std::size_t last = reader->rows() - 1;  // rows ascend by query position
    for (std::size_t k = 0; k < kr; ++k) last_row_values[k].push_back(per_row[last * kr + k]);
    const auto profile = reader->profile(h.layer, h.head);
    for (std::size_t t = 0; t < seq_len; ++t) h.profile[t] += profile[t];
    h.samples += reader->rows();
  }
  for (double& p : h.profile) p /= static_cast<double>(readers.size());
  for (const auto& v : row_values) h.per_row.push_back(summarize(v));
  for (const auto& v : last_row_values) h.last_row.push_back(summarize(v));
  for (const auto& v : n_values) h.per_n.push_back(summarize(v));
}

}  // namespace

const Summary& RunAggregate::row_stat(const HeadAggregate& h, const std::string& field) const {
  return h.per_row[schema.per_row_index(field)];
}

const Summary& RunAggregate::last_row_stat(const HeadAggregate& h, const std::string& field) const {
  return h.last_row[schema.per_row_index(field)];
}

const Summary& RunAggregate::n_stat(const HeadAggregate& h, std::size_t g, const std::string& field) const {
  return h.per_n[g * schema.per_n_fields.size() + schema.per_n_index(field)];
}

RunAggregate aggregate_records(const std::vector<std::filesystem::path>& record_files, int kv_heads,
                               const AggregateOptions& options) {
  const auto readers = open_records(record_files);
  RunAggregate run;
  run.schema = readers.front()->schema();
  run.layers = readers.front()->layers();
  run.heads = readers.front()->heads();
  run.kv_heads = kv_heads;
  run.seq_len = readers.front()->seq_len();
  for (const auto& r : readers) run.sequences.push_back(r->sequence());
  const std::size_t g_count = run.schema.n_grid.size();

  std::vector<geometry::TaxonomyFeatures> features;
  std::vector<HeadType> labels;
  std::vector<double> rho0, recall;  // [heads], [heads, G]
  for (int l = 0; l < run.layers; ++l) {
    for (int hd = 0; hd < run.heads; ++hd) {
      HeadAggregate h;
      h.layer = l;
      h.head = hd;
      h.kv_head = hd / (run.heads / kv_heads);
      summarise_head(readers, run.schema, h);
      const auto last_mean = [&](const char* field) { return run.last_row_stat(h, field).mean; };
      h.features = {last_mean("sink_share"),     last_mean("last_share"),     last_mean("rest_share"),
                    last_mean("cos_sink_small"), last_mean("cos_sink_large"), last_mean("cos_last_small"),
                    last_mean("cos_last_large")};
      h.rules = stats::classify(h.features, options.taxonomy);

      double f_small_sum = 0, best_f = -1, p_lo = INFINITY, p_hi = -INFINITY;
      std::size_t f_small_count = 0, non_trivial = 0, negative = 0;
      for (std::size_t g = 0; g < g_count; ++g) {
        const std::size_t n = run.schema.n_grid[g];
        const double f = run.n_stat(h, g, "f").mean;
        if (n < 2 || !std::isfinite(f)) continue;
        if (n <= 4) f_small_sum += f, ++f_small_count;
        if (f > best_f) best_f = f, h.peak_f_n = n;
        const double p = run.n_stat(h, g, "precision").mean;
        p_lo = std::min(p_lo, p), p_hi = std::max(p_hi, p);
        ++non_trivial;
        negative += run.n_stat(h, g, "margin").mean < 0 ? 1 : 0;
      }
      h.f_small = f_small_count ? f_small_sum / static_cast<double>(f_small_count) : NAN;
      h.flag_negative_margin = non_trivial > 0 && negative == non_trivial;
      h.flag_flat_precision = non_trivial > 1 && p_hi - p_lo < options.flat_precision_range;
      // Below a uniform row's share; exactly uniform heads (float noise around 1/T) are not flagged.
      h.flag_no_sink = run.row_stat(h, "sink_mass").mean < (1.0 - kNoSinkSlack) / static_cast<double>(run.seq_len);

      features.push_back(h.features);
      labels.push_back(h.rules.label);
      rho0.push_back(run.row_stat(h, "rho0").mean);
      for (std::size_t g = 0; g < g_count; ++g) recall.push_back(run.n_stat(h, g, "recall").mean);
      run.heads_table.push_back(std::move(h));
    }
  }
  run.kmeans = stats::kmeans_cross_check(features, labels, options.kmeans, options.seed);
  for (std::size_t i = 0; i < run.heads_table.size(); ++i) run.heads_table[i].kmeans_cluster = run.kmeans.cluster[i];
  run.layer_shares = stats::type_shares_by_layer(labels, static_cast<std::size_t>(run.heads));

  // Rows with fewer keys than N leave NaN recall; those heads sit out at that N.
  run.sink_recall = stats::sink_recall_correlation(rho0, recall, run.schema.n_grid, options.bootstrap, options.seed);

  for (int l = 0; l < run.layers; ++l) {
    std::vector<double> mean_profile(run.seq_len, 0.0);
    for (int hd = 0; hd < run.heads; ++hd) {
      const auto& p = run.heads_table[static_cast<std::size_t>(l * run.heads + hd)].profile;
      for (std::size_t t = 0; t < run.seq_len; ++t) mean_profile[t] += p[t] / run.heads;
    }
    run.layer_profile.push_back(std::move(mean_profile));
  }
  // Every profile fit is O(M^2) and independent of the others (a 7B model has over a thousand
  // at long M): one profile per thread.
  const std::size_t head_count = run.heads_table.size();
  run.layer_profile_fit.resize(run.layer_profile.size());
  parallel_for_each(head_count + run.layer_profile.size(), [&](std::size_t i) {
    if (i < head_count) {
      run.heads_table[i].profile_fit = stats::fit_four_phase(run.heads_table[i].profile, options.profile_fit);
    } else {
      run.layer_profile_fit[i - head_count] =
          stats::fit_four_phase(run.layer_profile[i - head_count], options.profile_fit);
    }
  });
  return run;
}

}  // namespace attngeom
