// Cost of analyze's per-row geometry (geometry::analyze_row) at a 7B head's size,
// M = 1024 keys, d = 128, on SPEC's default N grid: everything, with the maximum cosine
// deviation screened by the fp32 (Eigen), int8 or bf16 (oneDNN, analyze's) pair products, and
// without the reconstructed bounds (whose deviations need the O(M^2 d) pairwise products).
// analyze runs this once per (layer, head, sequence, query row).
#include <memory>
#include <random>

#include <benchmark/benchmark.h>

#include "analysis/screen_products.h"
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

enum Variant { kWithoutBounds, kFp32Screen, kInt8Screen, kBf16Screen };

void BM_AnalyzeRow(benchmark::State& state) {
  const SyntheticHead& head = bench_head();
  const HeadRowView row{head.alpha, head.values, kDim};
  const auto variant = static_cast<Variant>(state.range(0));
  std::unique_ptr<PairProducts> screen;
  if (variant == kInt8Screen) screen = make_int8_pair_products(kDim);
  if (variant == kBf16Screen) screen = make_bf16_pair_products(kDim);
  if ((variant == kInt8Screen || variant == kBf16Screen) && !screen) {
    state.SkipWithError(variant == kInt8Screen ? "no int8 dot products (VNNI) on this CPU" : "no bf16 matmul on this CPU");
    return;
  }
  RowAnalysisOptions options;
  options.bounds = variant != kWithoutBounds;
  options.pair_products = screen.get();
  for (auto _ : state) benchmark::DoNotOptimize(analyze_row(row, options));
  static constexpr const char* kLabels[] = {"without bounds", "with bounds R1/R2/R3, fp32 screen",
                                            "with bounds R1/R2/R3, int8 screen", "with bounds R1/R2/R3, bf16 screen"};
  state.SetLabel(kLabels[variant]);
}
BENCHMARK(BM_AnalyzeRow)
    ->Arg(kFp32Screen)
    ->Arg(kInt8Screen)
    ->Arg(kBf16Screen)
    ->Arg(kWithoutBounds)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace attngeom::geometry
