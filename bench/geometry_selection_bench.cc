// All-N selection metrics at M = 1024, d = 128: the Gram sweep against the naive from-scratch
// per-N loop (the test oracle). Same outputs, same asymptotic order; the ratio is the point.
// Two rows: random lognormal weights with random directions, and a synthetic four-phase head.
#include <benchmark/benchmark.h>

#include <random>

#include "four_phase_head.h"
#include "geometry/selection_metrics.h"
#include "naive_selection.h"
#include "random_rows.h"
#include "synth/synthetic.h"

namespace attngeom::geometry {

namespace {

using bench::kDim;
using bench::kKeys;

const testing::OwnedRow& random_bench_row() {
  static const testing::OwnedRow row = [] {
    std::mt19937_64 rng(7);
    return testing::random_row(rng, kKeys, kDim, {0.05, 0.01, 0.0});
  }();
  return row;
}

const testing::OwnedRow& four_phase_bench_row() {
  static const testing::OwnedRow row{bench::four_phase_head().alpha, bench::four_phase_head().values, kDim};
  return row;
}

const testing::OwnedRow& bench_row(std::int64_t which) {
  return which == 0 ? random_bench_row() : four_phase_bench_row();
}

void BM_AllNGramSweep(benchmark::State& state) {
  const HeadRowView row = bench_row(state.range(0)).view();
  const std::vector<std::size_t> all = every_n(kKeys);
  SelectionOptions options;
  options.method = ProjectionMethod::kGram;
  for (auto _ : state) benchmark::DoNotOptimize(selection_metrics(row, all, options));
}
BENCHMARK(BM_AllNGramSweep)->Arg(0)->Arg(1)->ArgName("four_phase")->Unit(benchmark::kMillisecond);

void BM_AllNNaivePerN(benchmark::State& state) {
  const HeadRowView row = bench_row(state.range(0)).view();
  const std::vector<std::size_t> all = every_n(kKeys);
  const SelectionOptions options;
  for (auto _ : state) benchmark::DoNotOptimize(oracle::naive_selection_metrics(row, all, options.normalised_radii));
}
BENCHMARK(BM_AllNNaivePerN)->Arg(0)->Arg(1)->ArgName("four_phase")->Unit(benchmark::kMillisecond);

void BM_DefaultGridDirect(benchmark::State& state) {
  const HeadRowView row = bench_row(state.range(0)).view();
  const std::vector<std::size_t> grid = default_n_grid(kKeys);
  SelectionOptions options;
  options.method = ProjectionMethod::kDirect;
  for (auto _ : state) benchmark::DoNotOptimize(selection_metrics(row, grid, options));
}
BENCHMARK(BM_DefaultGridDirect)->Arg(0)->Arg(1)->ArgName("four_phase")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace attngeom::geometry
