#pragma once
// Aggregation of a run's per-sequence records into per-head tables: distributions over
// samples (one sample = one (sequence, query row)), the mean attention profile, and the
// cross-head results (taxonomy, sink-vs-recall correlation, profile fits).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/record.h"
#include "analysis/summary.h"
#include "stats/correlation.h"
#include "stats/profile_fit.h"
#include "stats/taxonomy.h"

namespace attngeom {

struct AggregateOptions {
  stats::TaxonomyOptions taxonomy;
  stats::KMeansOptions kmeans;
  stats::BootstrapOptions bootstrap;
  stats::FourPhaseFitOptions profile_fit;
  std::uint64_t seed = 1234;           // k-means and bootstrap
  double flat_precision_range = 0.05;  // flag: mean P varies by less than this over N >= 2
};

struct HeadAggregate {
  int layer = 0;
  int head = 0;
  int kv_head = 0;
  std::size_t samples = 0;
  std::vector<Summary> per_row;         // [Kr] over samples
  std::vector<Summary> per_n;           // [G, Kn] over samples
  std::vector<Summary> last_row;        // [Kr] over each sequence's last query row (docs/method.md section 6)
  std::vector<double> profile;          // [T] mean last-query row
  geometry::TaxonomyFeatures features;  // means over the last query rows
  stats::RuleMatch rules;
  std::size_t kmeans_cluster = 0;
  double f_small = 0;        // mean F over N = 2..4
  std::size_t peak_f_n = 0;  // N >= 2 with the highest mean F (0 if none)
  bool flag_negative_margin = false;
  bool flag_flat_precision = false;
  bool flag_no_sink = false;
  stats::FourPhaseFit profile_fit;
};

struct RunAggregate {
  RecordSchema schema;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;
  std::size_t seq_len = 0;
  std::vector<std::size_t> sequences;      // ascending indices of the records used
  std::vector<HeadAggregate> heads_table;  // [layers * heads]
  stats::ClusterCrossCheck kmeans;
  stats::SinkRecallCorrelation sink_recall;
  std::vector<stats::LayerTypeShares> layer_shares;
  std::vector<std::vector<double>> layer_profile;      // [layers][T] mean over heads
  std::vector<stats::FourPhaseFit> layer_profile_fit;  // [layers]

  const Summary& row_stat(const HeadAggregate& h, const std::string& field) const;
  // Over each sequence's last query row only: the taxonomy's input (docs/method.md section 6 reads the
  // last-query row); the same as row_stat under --queries last.
  const Summary& last_row_stat(const HeadAggregate& h, const std::string& field) const;
  const Summary& n_stat(const HeadAggregate& h, std::size_t g, const std::string& field) const;
};

// Reads every record file (ascending sequence order) and aggregates. All records must
// share one schema, model shape and sequence length; otherwise InputError.
RunAggregate aggregate_records(const std::vector<std::filesystem::path>& record_files, int kv_heads,
                               const AggregateOptions& options);

}  // namespace attngeom
