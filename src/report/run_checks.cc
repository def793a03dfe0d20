#include "report/run_checks.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <tuple>

#include "util/error.h"

namespace attngeom::report {

namespace {

using nlohmann::json;

// A positive integer of run.json at `key` inside `object`.
long run_int(const RunData& run, const json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer() || it->get<long>() < 1) {
    throw InputError((run.dir / "run.json").string() + ": '" + where + "' must be a positive integer");
  }
  return it->get<long>();
}

[[noreturn]] void bad_cell(const CsvTable& t, std::size_t row, const char* column, const std::string& what) {
  throw InputError(t.path().string() + ":" + std::to_string(t.line_of(row)) + ": column '" + column + "': " + what);
}

// The model's shape and the N a run measures, from run.json.
struct RunShape {
  long layers = 0, heads = 0;
  std::set<long> n_grid;  // empty: any N in [1, seq_len)
  long seq_len = 0;       // 0: unknown
};

RunShape shape_of(const RunData& run) {
  const json& r = run.run;
  const auto model = r.find("model");
  if (model == r.end() || !model->is_object()) {
    throw InputError((run.dir / "run.json").string() + ": 'model' must be an object with layers and heads");
  }
  RunShape s;
  s.layers = run_int(run, *model, "layers", "model.layers");
  s.heads = run_int(run, *model, "heads", "model.heads");
  if (r.contains("seq_len")) s.seq_len = run_int(run, r, "seq_len", "seq_len");
  if (const auto grid = r.find("n_grid"); grid != r.end() && grid->is_array()) {
    for (const json& n : *grid) {
      if (!n.is_number_integer()) throw InputError((run.dir / "run.json").string() + ": 'n_grid' must hold integers");
      s.n_grid.insert(n.get<long>());
    }
  }
  return s;
}

long index_in(const CsvTable& t, std::size_t row, const char* column, long end, const char* what) {
  const long v = t.integer(row, t.column(column));
  if (v < 0 || v >= end) {
    bad_cell(t, row, column,
             std::to_string(v) + " is outside the run's " + std::to_string(end) + " " + what + " (run.json model)");
  }
  return v;
}

long n_in(const CsvTable& t, std::size_t row, const RunShape& s) {
  const long n = t.integer(row, t.column("n"));
  const bool ok = s.n_grid.empty() ? n >= 1 && (s.seq_len == 0 || n < s.seq_len) : s.n_grid.count(n) > 0;
  if (!ok) bad_cell(t, row, "n", std::to_string(n) + " is not an N of the run's grid (run.json n_grid)");
  return n;
}

// Rounding allowed past a bound: a capture dump's rows may sum to 1 within 1e-3 (the
// row check's tolerance), and float32 probabilities put a uniform row's entropy at 1 + 1e-8.
constexpr double kBoundSlack = 1e-3;

// A value that must lie in [lo, hi] up to kBoundSlack; NaN (undefined) passes.
void in_range(const CsvTable& t, std::size_t row, const char* column, double lo, double hi) {
  const double v = t.number(row, t.column(column));
  if (!std::isnan(v) && !(v >= lo - kBoundSlack && v <= hi + kBoundSlack)) {
    char bounds[64];
    std::snprintf(bounds, sizeof bounds, "[%g, %g]", lo, hi);
    bad_cell(t, row, column, t.text(row, t.column(column)) + " is outside " + bounds);
  }
}

template <class Key>
void unique(std::set<Key>& seen, const Key& key, const CsvTable& t, std::size_t row, const char* columns) {
  if (!seen.insert(key).second) bad_cell(t, row, columns, "a second row for the same key");
}

void check_heads(const RunData& run, const RunShape& s) {
  const CsvTable& t = run.heads;
  std::set<std::pair<long, long>> seen;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const long layer = index_in(t, i, "layer", s.layers, "layers");
    const long head = index_in(t, i, "head", s.heads, "heads");
    unique(seen, {layer, head}, t, i, "layer, head");
    for (const char* share : {"sink_mass", "last_mass", "entropy", "f_small"}) in_range(t, i, share, 0, 1);
  }
  if (seen.size() != static_cast<std::size_t>(s.layers * s.heads)) {
    throw InputError(t.path().string() + ": " + std::to_string(seen.size()) + " heads, but run.json's model has " +
                     std::to_string(s.layers) + " x " + std::to_string(s.heads));
  }
}

void check_selection(const RunData& run, const RunShape& s) {
  const CsvTable& t = run.selection;
  std::set<std::tuple<long, long, long>> seen;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const long layer = index_in(t, i, "layer", s.layers, "layers");
    const long head = index_in(t, i, "head", s.heads, "heads");
    unique(seen, {layer, head, n_in(t, i, s)}, t, i, "layer, head, n");
    for (const char* column : {"precision_mean", "recall_mean", "f_mean", "separated", "r1_inside"}) {
      in_range(t, i, column, 0, 1);
    }
  }
}

void check_sink_recall(const RunData& run, const RunShape& s) {
  const CsvTable& t = run.sink_recall;
  std::set<long> seen;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    unique(seen, n_in(t, i, s), t, i, "n");
    in_range(t, i, "heads", 0, static_cast<double>(s.layers * s.heads));
    for (const char* method : {"pearson", "spearman"}) {
      const std::string lo = std::string(method) + "_lo", hi = std::string(method) + "_hi";
      for (const std::string& column : {std::string(method), lo, hi}) in_range(t, i, column.c_str(), -1, 1);
      const double r = t.number(i, t.column(method)), l = t.number(i, t.column(lo)), h = t.number(i, t.column(hi));
      if (std::isfinite(r) && std::isfinite(l) && std::isfinite(h) && !(l <= r && r <= h)) {
        bad_cell(t, i, method,
                 "the estimate lies outside its own interval [" + t.text(i, t.column(lo)) + ", " +
                     t.text(i, t.column(hi)) + "]");
      }
    }
  }
}

void check_layers(const RunData& run, const RunShape& s) {
  const CsvTable& t = run.layers;
  std::set<long> seen;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    unique(seen, index_in(t, i, "layer", s.layers, "layers"), t, i, "layer");
    in_range(t, i, "heads", 0, static_cast<double>(s.heads));
    double total = 0;
    for (const char* share : {"retriever_share", "mixer_share", "reset_share", "unclassified_share"}) {
      in_range(t, i, share, 0, 1);
      total += t.number(i, t.column(share));
    }
    if (std::isfinite(total) && std::abs(total - 1) > 1e-6) {
      bad_cell(t, i, "retriever_share", "the four type shares sum to " + std::to_string(total) + ", not 1");
    }
  }
}

void check_profile(const RunData& run, const RunShape& s) {
  const CsvTable& t = run.profile_layers;
  std::set<std::pair<long, long>> seen;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const long layer = index_in(t, i, "layer", s.layers, "layers");
    const long position = t.integer(i, t.column("position"));
    if (position < 0 || (s.seq_len > 0 && position >= s.seq_len)) {
      bad_cell(t, i, "position", std::to_string(position) + " is outside the run's sequence (run.json seq_len)");
    }
    unique(seen, {layer, position}, t, i, "layer, position");
    in_range(t, i, "mean_alpha", 0, 1);
  }
}

void check_optional(const RunData& run) {
  if (run.pruning) {
    const CsvTable& t = *run.pruning;
    std::set<std::tuple<std::string, long, std::string>> seen;  // a repeat would count as another seed
    for (std::size_t i = 0; i < t.rows(); ++i) {
      unique(seen, {t.text(i, t.column("strategy")), t.integer(i, t.column("seed")), t.text(i, t.column("fraction"))},
             t, i, "strategy, seed, fraction");
      in_range(t, i, "fraction", 0, 1);
      in_range(t, i, "top1", 0, 1);
    }
  }
  if (run.topn_budget) {
    const CsvTable& t = *run.topn_budget;
    std::set<std::pair<std::string, long>> seen;
    for (std::size_t i = 0; i < t.rows(); ++i) {
      unique(seen, {t.text(i, t.column("policy")), t.integer(i, t.column("budget"))}, t, i, "policy, budget");
      in_range(t, i, "kept_share", 0, 1);
      in_range(t, i, "top1", 0, 1);
    }
  }
}

// A mixture of experts' tables: routed layers of the model, counts of tokens, shares.
void check_experts(const RunData& run, const RunShape& s) {
  const auto count = [](const CsvTable& t, std::size_t row, const char* column) {
    const long v = t.integer(row, t.column(column));
    if (v < 0) bad_cell(t, row, column, std::to_string(v) + " is negative");
    return v;
  };
  if (run.experts) {
    const CsvTable& t = *run.experts;
    std::set<std::pair<long, long>> seen;
    for (std::size_t i = 0; i < t.rows(); ++i) {
      unique(seen, {index_in(t, i, "layer", s.layers, "layers"), count(t, i, "expert")}, t, i, "layer, expert");
      count(t, i, "tokens");
      in_range(t, i, "share", 0, 1);
    }
  }
  if (run.routing) {
    const CsvTable& t = *run.routing;
    std::set<long> seen;
    for (std::size_t i = 0; i < t.rows(); ++i) {
      if (!seen.insert(index_in(t, i, "layer", s.layers, "layers")).second) {
        bad_cell(t, i, "layer", "a second row for the same key");
      }
      const long tokens = count(t, i, "tokens");
      // Empty on the fp32 path, where the router is not checked against itself.
      if (!t.text(i, t.column("routing_flips")).empty())
        in_range(t, i, "routing_flips", 0, static_cast<double>(tokens));
    }
  }
}

}  // namespace

void check_run_tables(const RunData& run) {
  const RunShape shape = shape_of(run);
  check_heads(run, shape);
  check_selection(run, shape);
  check_sink_recall(run, shape);
  check_layers(run, shape);
  check_profile(run, shape);
  check_optional(run);
  check_experts(run, shape);
}

}  // namespace attngeom::report
