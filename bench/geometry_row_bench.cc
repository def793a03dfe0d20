// Cost of analyze's per-row geometry (geometry::analyze_row) at a 7B head's size,
// M = 1024 keys, d = 128, on SPEC's default N grid: everything, and without the
// reconstructed bounds (whose cosine deviations need the O(M^2 d) Gram matrix).
// analyze runs this once per (layer, head, sequence, query row).
#include <random>

#include <benchmark/benchmark.h>

#include "geometry/row_analysis.h"
#include "geometry/synthetic.h"

namespace attngeom::geometry {
namespace {

constexpr std::size_t kKeys = 1024;
constexpr std::size_t kDim = 128;

const SyntheticHead& bench_head() {
  static const SyntheticHead head = [] {
    std::mt19937_64 rng(7);
    const ValueSampler sampler({kDim, 1.0, 0.03, 0.2, 0.1, 0.1}, kKeys);
    return synthetic_head(attention_profile({}, kKeys), sampler, rng);
  }();
  return head;
}

void BM_AnalyzeRow(benchmark::State& state) {
  const SyntheticHead& head = bench_head();
  const HeadRowView row{head.alpha, head.values, kDim};
  RowAnalysisOptions options;
  options.bounds = state.range(0) != 0;
  for (auto _ : state) benchmark::DoNotOptimize(analyze_row(row, options));
  state.SetLabel(options.bounds ? "with bounds R1/R2/R3" : "without bounds");
}
BENCHMARK(BM_AnalyzeRow)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace attngeom::geometry
