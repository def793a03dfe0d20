#include "analysis/sequence_analyzer.h"

#include <algorithm>
#include <string>

#include "analysis/head_analysis.h"
#include "analysis/screen_products.h"
#include "geometry/value_rows.h"
#include "util/error.h"
#include "util/parallel.h"

namespace attngeom {

SequenceAnalyzer::SequenceAnalyzer(const ModelConfig& config, const RecordSchema& schema,
                                   const geometry::RowAnalysisOptions& options)
    : config_(config), schema_(schema), options_(options) {
  if (options_.pair_products == nullptr) {
    pair_products_ = make_screen_pair_products(static_cast<std::size_t>(config.head_dim));
    options_.pair_products = pair_products_.get();  // stays null (fp32) without either kernel
  }
}

void SequenceAnalyzer::use_deviations(std::shared_ptr<InstancePool<LayerDeviations>> pool) {
  if (reads_layer_deviations(options_)) deviations_ = std::move(pool);
}

void SequenceAnalyzer::use_row_parts(std::shared_ptr<InstancePool<LayerRowParts>> pool) {
  if (reads_layer_row_parts(options_)) row_parts_ = std::move(pool);
}

void SequenceAnalyzer::begin(std::size_t sequence, std::span<const int> tokens, std::span<const int> rows) {
  record_.sequence = sequence;
  record_.tokens.assign(tokens.begin(), tokens.end());
  record_.query_positions.assign(rows.begin(), rows.end());
  record_.resize(schema_, config_.layers, config_.heads, tokens.size(), rows.size());
  record_.resize_routing(config_.recipe.moe.experts);
  layers_.assign(static_cast<std::size_t>(config_.layers), {});
  layers_done_ = 0;
  parts_ = {};
}

SequenceAnalyzer::PartSeconds SequenceAnalyzer::part_seconds() const {
  const std::lock_guard lock(mutex_);
  return parts_;
}

void SequenceAnalyzer::add_seconds(double PartSeconds::*part, std::chrono::steady_clock::time_point start) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::lock_guard lock(mutex_);
  parts_.*part += seconds;
}

void SequenceAnalyzer::on_routing(int layer, const ExpertRouting& routing) {
  ATTNGEOM_CHECK(routing.experts == record_.experts && static_cast<std::size_t>(routing.seq) == record_.seq_len());
  std::copy(routing.load.begin(), routing.load.end(),
            record_.expert_load.begin() + static_cast<std::ptrdiff_t>(layer) * record_.experts);
  record_.routing_flips[static_cast<std::size_t>(layer)] = routing.flips;
}

void SequenceAnalyzer::on_values(int layer, const ValueStates& values) {
  ATTNGEOM_CHECK(values.space == MemorySpace::kHost && values.kv_heads == config_.kv_heads &&
                 values.head_dim == config_.head_dim && static_cast<std::size_t>(values.seq) == record_.seq_len());
  LayerState& state = layers_.at(static_cast<std::size_t>(layer));
  state.values = values;
  // Shared by the heads of a GQA group, and by the rows of a kv head (geometry/value_rows.h).
  if (config_.group_size() > 1 || record_.rows() > 1 || deviations_ || row_parts_)
    state.shared.resize(static_cast<std::size_t>(config_.kv_heads) * record_.rows());
}

namespace {

// Rows of one head analysed by one task: enough tasks to keep every thread busy when a block
// holds a few heads with many rows, few enough that a task outweighs its scheduling.
constexpr std::size_t kRowsPerTask = 16;

// The value geometry of every captured row (ascending positions) of each kv head whose last
// row is longest[g], into shared [kv heads, rows]: the rows of a kv head share their keys'
// units, lag cosines and, where chosen, maximum deviations (geometry/value_rows.h), each stage
// on all threads.
void share_among_rows(std::span<const geometry::HeadRowView> longest, std::span<const int> positions,
                      const geometry::RowAnalysisOptions& options, std::span<geometry::ValueGeometry> shared) {
  const std::size_t count = positions.size();
  std::vector<std::size_t> keys(count);
  for (std::size_t q = 0; q < count; ++q) keys[q] = static_cast<std::size_t>(positions[q]) + 1;
  std::vector<std::unique_ptr<geometry::ValueRows>> value_rows(longest.size());  // [kv heads]
  parallel_for_each(longest.size(), [&](std::size_t g) {
    value_rows[g] = std::make_unique<geometry::ValueRows>(longest[g], keys, options);
  });
  const std::size_t parts = value_rows.front()->band_parts();
  parallel_for_each(longest.size() * parts,
                    [&](std::size_t task) { value_rows[task / parts]->compute_band(task % parts); });
  parallel_for_each(longest.size(), [&](std::size_t g) { value_rows[g]->finish_band(); });
  parallel_for_each(longest.size() * count,
                    [&](std::size_t task) { shared[task] = value_rows[task / count]->row(task % count); });
  const std::size_t deviation_parts = value_rows.front()->deviation_parts();
  const auto rows_of = [&](std::size_t g) { return shared.subspan(g * count, count); };
  parallel_for_each(longest.size() * deviation_parts, [&](std::size_t task) {
    value_rows[task / deviation_parts]->compute_deviations(task % deviation_parts, rows_of(task / deviation_parts));
  });
  if (deviation_parts > 0) {
    for (std::size_t g = 0; g < longest.size(); ++g) value_rows[g]->finish_deviations(rows_of(g));
  }
}

}  // namespace

void SequenceAnalyzer::share_values(LayerState& layer, const AttentionRows& rows) {
  const std::size_t count = record_.rows();
  const int kv_begin = config_.kv_head_of(rows.head_begin);
  const int kv_end = config_.kv_head_of(rows.head_end - 1) + 1;
  geometry::RowAnalysisOptions options = options_;
  options.bounds = options_.bounds && !deviations_;  // else the deviations come after, all at once
  const auto start = std::chrono::steady_clock::now();
  const auto d = static_cast<std::size_t>(config_.head_dim);
  // Row q of kv head g, over keys 0..q. Only the values are read: any alpha over the same keys
  // will do, here the first head's.
  const auto row_of = [&](int kv_head, std::size_t q) {
    const auto keys = static_cast<std::size_t>(record_.query_positions[q]) + 1;
    const float* alpha =
        rows.head_rows(std::max(rows.head_begin, kv_head * config_.group_size())) + q * record_.seq_len();
    return geometry::HeadRowView{std::span<const float>(alpha, keys),
                                 std::span<const float>(layer.values.kv_head(kv_head), keys * d), d};
  };
  std::span<geometry::ValueGeometry> shared =
      std::span<geometry::ValueGeometry>(layer.shared)
          .subspan(static_cast<std::size_t>(kv_begin) * count, static_cast<std::size_t>(kv_end - kv_begin) * count);
  const auto kv_heads = static_cast<std::size_t>(kv_end - kv_begin);
  if (count == 1) {
    parallel_for_each(kv_heads, [&](std::size_t g) {
      shared[g] = geometry::analyze_values(row_of(kv_begin + static_cast<int>(g), 0), options);
    });
  } else {
    std::vector<geometry::HeadRowView> longest;  // [kv heads of the block] each one's last row
    for (std::size_t g = 0; g < kv_heads; ++g) longest.push_back(row_of(kv_begin + static_cast<int>(g), count - 1));
    share_among_rows(longest, record_.query_positions, options, shared);
  }
  add_seconds(&PartSeconds::value_geometry, start);
  if (deviations_) {
    const auto lease = deviations_->borrow();
    const auto gpu_start = std::chrono::steady_clock::now();
    lease->fill(layer.values, kv_begin, kv_end, record_.query_positions, shared);
    add_seconds(&PartSeconds::deviations, gpu_start);
  }
}

void SequenceAnalyzer::on_attention(int layer, const AttentionRows& rows) {
  const std::size_t seq = record_.seq_len();
  const std::size_t count = record_.rows();
  LayerState& state = layers_.at(static_cast<std::size_t>(layer));
  ATTNGEOM_CHECK(state.values.values != nullptr && rows.space == MemorySpace::kHost && rows.positions.size() == count &&
                 static_cast<std::size_t>(rows.seq) == seq);
  if (!state.shared.empty()) share_values(state, rows);
  if (row_parts_) {
    state.given.resize(static_cast<std::size_t>(rows.heads()) * count);
    const auto lease = row_parts_->borrow();
    const auto start = std::chrono::steady_clock::now();
    lease->fill(config_, state.values, rows, state.shared, options_, state.given);
    add_seconds(&PartSeconds::row_parts, start);
  }
  const auto heads_start = std::chrono::steady_clock::now();
  const std::size_t n_block = schema_.n_grid.size() * schema_.per_n_fields.size();
  const std::size_t row_block = schema_.per_row_fields.size();
  const std::size_t chunks = (count + kRowsPerTask - 1) / kRowsPerTask;  // per head
  parallel_for_each(static_cast<std::size_t>(rows.heads()) * chunks, [&](std::size_t task) {
    const int head = rows.head_begin + static_cast<int>(task / chunks);
    const std::size_t q0 = (task % chunks) * kRowsPerTask;
    const std::size_t q1 = std::min(q0 + kRowsPerTask, count);
    const int kv_head = config_.kv_head_of(head);
    const std::size_t lh = static_cast<std::size_t>(layer) * config_.heads + head;
    HeadRows head_rows{std::span<const int>(record_.query_positions).subspan(q0, q1 - q0),
                       rows.head_rows(head) + q0 * seq,
                       seq,
                       state.values.kv_head(kv_head),
                       static_cast<std::size_t>(config_.head_dim),
                       {},
                       {}};
    if (!state.shared.empty()) {
      head_rows.shared_values = std::span<const geometry::ValueGeometry>(state.shared)
                                    .subspan(static_cast<std::size_t>(kv_head) * count + q0, q1 - q0);
    }
    if (!state.given.empty()) {
      head_rows.given = std::span<geometry::GivenRowParts>(state.given)
                            .subspan(static_cast<std::size_t>(head - rows.head_begin) * count + q0, q1 - q0);
    }
    try {
      analyze_head_rows(
          head_rows, schema_, options_,
          std::span<double>(record_.per_n).subspan((lh * count + q0) * n_block, (q1 - q0) * n_block),
          std::span<double>(record_.per_row).subspan((lh * count + q0) * row_block, (q1 - q0) * row_block));
    } catch (const InputError& e) {
      throw InputError("model.layers." + std::to_string(layer) + " head " + std::to_string(head) + ", " + e.what());
    }
    // The mean attention profile uses the last captured row.
    if (q1 == count) {
      const float* last = rows.head_rows(head) + (count - 1) * seq;
      std::copy(last, last + seq, record_.profile.begin() + static_cast<std::ptrdiff_t>(lh * seq));
    }
  });
  add_seconds(&PartSeconds::heads, heads_start);
  if (rows.head_end < config_.heads) return;
  state = {};  // the layer is done: its buffer goes back to the engine, its shared geometry is freed
  const std::lock_guard lock(mutex_);
  ++layers_done_;
  if (layer_done_) layer_done_(layers_done_);
}

}  // namespace attngeom
