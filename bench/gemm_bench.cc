// Linear-layer throughput of each precision path on 7B-like shapes.
// Reports TFLOP/s = 2 * rows * in * out / time.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "ops/bf16_matmul.h"
#include "ops/gemm.h"

namespace attngeom {
namespace {

// The three kernels: 0 fp32 sgemm, 1 fp32 bf16x3, 2 bf16.
std::unique_ptr<LinearBackend> kernel_backend(std::int64_t index) {
  if (index == 2) return make_bf16_backend();
  return index == 1 ? make_bf16x3_backend() : make_fp32_backend();
}

// [count] bf16 draws of N(0, scale^2).
std::vector<std::uint16_t> random_bf16(std::int64_t count, float scale, std::mt19937& rng) {
  std::normal_distribution<float> dist;
  std::vector<std::uint16_t> out(static_cast<std::size_t>(count));
  for (auto& v : out) v = f32_to_bf16(dist(rng) * scale);
  return out;
}

void count_tflops(benchmark::State& state, std::int64_t rows, std::int64_t in, std::int64_t out) {
  state.counters["TFLOP/s"] =
      benchmark::Counter(2.0 * rows * in * out * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Linear(benchmark::State& state) {
  const std::int64_t rows = state.range(1), in = state.range(2), out = state.range(3);
  std::mt19937 rng(0);
  std::normal_distribution<float> dist;
  std::vector<float> x(static_cast<std::size_t>(rows * in));
  for (auto& v : x) v = dist(rng);
  const std::vector<std::uint16_t> w = random_bf16(out * in, 0.02f, rng);
  std::vector<float> y(static_cast<std::size_t>(rows * out));
  const TensorView view{"w", DType::kBF16, out, in, w.data()};
  auto backend = kernel_backend(state.range(0));
  for (auto _ : state) {
    backend->linear(x.data(), rows, view, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  count_tflops(state, rows, in, out);
  state.SetLabel(std::string(backend->kernel()));
}

BENCHMARK(BM_Linear)
    ->ArgNames({"kernel", "rows", "in", "out"})
    ->ArgsProduct({{0, 1, 2}, {1024}, {4096}, {4096, 11008}})
    ->Args({2, 1024, 11008, 4096})
    // bf16 at 512 and 2048 rows: how much of a call is fixed cost.
    ->Args({2, 512, 4096, 11008})
    ->Args({2, 2048, 4096, 11008})
    // Gemma-7B's MLP: the widest (24576) and deepest (K = 24576) products.
    ->Args({2, 1024, 3072, 24576})
    ->Args({2, 1024, 24576, 3072})
    // StarCoder2-7B: its non-gated MLP (4608 -> 18432 -> 4608) and 4 kv heads' k and v (512 rows).
    ->Args({2, 1024, 4608, 18432})
    ->Args({2, 1024, 18432, 4608})
    ->Args({2, 1024, 4608, 512})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The MLP's down projections (in >= 2 out) of the ~1B, LLaMA-2-7B, Mistral-7B, Gemma-7B and
// StarCoder2-7B shapes, issued as oneDNN's one dense call (blocks:0, brgemm) and in column blocks
// (blocks:1, gemm:jit): the measurement behind Bf16Matmul's choice.
void BM_DeepProduct(benchmark::State& state) {
  const std::int64_t rows = state.range(1), in = state.range(2), out = state.range(3);
  std::mt19937 rng(0);
  const std::vector<std::uint16_t> x = random_bf16(rows * in, 1.0f, rng), w = random_bf16(out * in, 0.02f, rng);
  std::vector<float> y(static_cast<std::size_t>(rows * out));
  Bf16Matmul matmul(state.range(0) == 1 ? DeepProducts::kColumnBlocks : DeepProducts::kOneCall);
  for (auto _ : state) {
    matmul.multiply(rows, in, out, x.data(), w.data(), y.data(), out);
    benchmark::DoNotOptimize(y.data());
  }
  count_tflops(state, rows, in, out);
}

BENCHMARK(BM_DeepProduct)
    ->ArgNames({"blocks", "rows", "in", "out"})
    ->Args({0, 1024, 5632, 2048})
    ->Args({1, 1024, 5632, 2048})
    ->Args({0, 1024, 11008, 4096})
    ->Args({1, 1024, 11008, 4096})
    ->Args({0, 1024, 14336, 4096})
    ->Args({1, 1024, 14336, 4096})
    ->Args({0, 1024, 24576, 3072})
    ->Args({1, 1024, 24576, 3072})
    ->Args({0, 1024, 18432, 4608})
    ->Args({1, 1024, 18432, 4608})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace attngeom
