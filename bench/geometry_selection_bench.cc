// All-N selection metrics at M = 1024, d = 128: the Gram sweep against the naive from-scratch
// per-N loop (the test oracle). Same outputs, same asymptotic order; the ratio is the point.
#include <random>

#include <benchmark/benchmark.h>

#include "geometry/selection_metrics.h"
#include "naive_selection.h"
#include "random_rows.h"

namespace attngeom::geometry {
namespace {

constexpr std::size_t kKeys = 1024;
constexpr std::size_t kDim = 128;

const testing::OwnedRow& bench_row() {
  static const testing::OwnedRow row = [] {
    std::mt19937_64 rng(7);
    return testing::random_row(rng, kKeys, kDim, {0.05, 0.01, 0.0});
  }();
  return row;
}

void BM_AllNGramSweep(benchmark::State& state) {
  const HeadRowView row = bench_row().view();
  const std::vector<std::size_t> all = every_n(kKeys);
  SelectionOptions options;
  options.method = ProjectionMethod::kGram;
  for (auto _ : state) benchmark::DoNotOptimize(selection_metrics(row, all, options));
}
BENCHMARK(BM_AllNGramSweep)->Unit(benchmark::kMillisecond);

void BM_AllNNaivePerN(benchmark::State& state) {
  const HeadRowView row = bench_row().view();
  const std::vector<std::size_t> all = every_n(kKeys);
  const SelectionOptions options;
  for (auto _ : state) benchmark::DoNotOptimize(oracle::naive_selection_metrics(row, all, options.normalised_radii));
}
BENCHMARK(BM_AllNNaivePerN)->Unit(benchmark::kMillisecond);

void BM_DefaultGridDirect(benchmark::State& state) {
  const HeadRowView row = bench_row().view();
  const std::vector<std::size_t> grid = default_n_grid(kKeys);
  SelectionOptions options;
  options.method = ProjectionMethod::kDirect;
  for (auto _ : state) benchmark::DoNotOptimize(selection_metrics(row, grid, options));
}
BENCHMARK(BM_DefaultGridDirect)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace attngeom::geometry
