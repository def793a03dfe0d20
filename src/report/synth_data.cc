#include "report/synth_data.h"

#include <cmath>
#include <optional>

namespace attngeom::report {

namespace {

using nlohmann::json;

struct SynthMetric {
  const char* column;   // in synth/summary.csv (docs/run_format.md)
  const char* display;  // as the report names it
  const char* lo;       // column of the reconstructed lower bound, or nullptr
  const char* hi;       // column of the reconstructed upper bound, or nullptr
};

// R1 bounds F from both sides; R2 gives a lower bound on the probability of separation.
constexpr SynthMetric kMetrics[] = {
    {"precision", "Precision", nullptr, nullptr},
    {"recall", "Recall", nullptr, nullptr},
    {"f", "F", "r1_f_lo", "r1_f_hi"},
    {"margin", "Margin", nullptr, nullptr},
    {"separated", "Separated share", "r2_separation_prob", nullptr},
};

json cell(const CsvTable& t, std::size_t row, std::optional<std::size_t> col) {
  if (!col) return nullptr;
  const double v = t.number(row, *col);
  return std::isfinite(v) ? json(v) : json(nullptr);
}

std::optional<std::size_t> numeric_column(const CsvTable& t, const char* name) {
  if (name == nullptr || !t.has_column(name) || !t.is_numeric(t.column(name))) return std::nullopt;
  return t.column(name);
}

bool is_metric_or_bound(const std::string& name) {
  for (const SynthMetric& m : kMetrics) {
    for (const char* c : {m.column, m.lo, m.hi}) {
      if (c != nullptr && name == c) return true;
    }
  }
  return false;
}

// "d = 64, L = 255": the numeric columns (besides n, metrics and bounds) with one value.
std::string constant_settings(const CsvTable& t, std::size_t n) {
  std::string out;
  for (std::size_t j = 0; j < t.header().size(); ++j) {
    if (j == n || !t.is_numeric(j) || is_metric_or_bound(t.header()[j])) continue;
    bool constant = true;
    for (std::size_t i = 1; i < t.rows() && constant; ++i) constant = t.text(i, j) == t.text(0, j);
    if (constant) out += (out.empty() ? "" : ", ") + t.header()[j] + " = " + t.text(0, j);
  }
  return out;
}

}  // namespace

SynthRows synth_rows(const std::string& run_label, const CsvTable& t) {
  SynthRows out;
  if (!t.has_column("profile") || !t.has_column("n") || t.rows() == 0) return out;
  const std::size_t profile = t.column("profile"), n = t.column("n");
  if (!t.is_numeric(n)) return out;
  for (const SynthMetric& m : kMetrics) {
    const auto value = numeric_column(t, m.column);
    if (!value) continue;
    out.metrics.push_back(m.display);
    const auto lo = numeric_column(t, m.lo), hi = numeric_column(t, m.hi);
    for (std::size_t i = 0; i < t.rows(); ++i) {
      out.rows.push_back({run_label, t.text(i, profile), t.number(i, n), m.display, cell(t, i, value), cell(t, i, lo),
                          cell(t, i, hi)});
    }
  }
  if (!out.metrics.empty()) out.settings = constant_settings(t, n);
  return out;
}

}  // namespace attngeom::report
