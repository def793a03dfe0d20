#pragma once
// The O(M^2 d) part of a row's value geometry on a GPU: how far every pairwise cosine of a
// row's value vectors strays from its cosine model (docs/geometry.md, "Cosine deviations"),
// for the captured rows of a layer's kv heads at once. Each kv head's Gram matrix comes in
// strips of its columns, each strip one double product for a batch of kv heads (cuBLAS's
// strided-batched DGEMM: products of floats are exact in double, so each cosine is as
// accurate as geometry's cosine_deviation from a double Gram, which it follows term by term);
// the strips of a batch take at most a fixed budget, so that memory stays linear in T. Rows
// ending at ascending keys, where they are many, take their pairs together, one walk per lag
// (geometry/lag_walk_step.h): O(T^2) per kv head instead of O(M^2) per row.
// Built only with CUDA; no CUDA type appears here.
#include <cstdint>
#include <memory>
#include <span>

namespace attngeom {

// geometry::CosineModel's two numbers: c_0l = rho_0, c_il = exp(-beta |i - l|).
struct PairDeviationModel {
  double beta = 0.0;
  double rho_0 = 0.0;
};

// Over the pairs i < l of non-zero vectors: max |delta|, sum delta^2 and how many pairs.
struct PairDeviationTotals {
  double max_abs = 0.0;
  double sum_sq = 0.0;
  std::uint64_t pairs = 0;
};

// The GPU memory that a batch's strips of Gram columns take, unless one strip of the fewest
// columns of one kv head needs more.
constexpr std::uint64_t kGramStripBytes = std::uint64_t{1} << 30;

class CudaPairDeviations {
 public:
  // Opens GPU `device` on the calling thread; every call selects it again on its own thread.
  explicit CudaPairDeviations(int device, std::uint64_t strip_bytes = kGramStripBytes);
  ~CudaPairDeviations();
  CudaPairDeviations(const CudaPairDeviations&) = delete;
  CudaPairDeviations& operator=(const CudaPairDeviations&) = delete;

  // values [heads, seq, dim], host fp32. Row r of head h reads keys 0..keys[r]-1 (each in
  // 1..seq) with the model models[h * rows + r]; totals [heads, rows]. Returns when done.
  void compute(const float* values, int heads, int seq, int dim, std::span<const int> keys,
               std::span<const PairDeviationModel> models, std::span<PairDeviationTotals> totals);

  // Whether compute() walks the lags for rows with these keys: where they ascend and their own
  // passes would visit more pairs than the longest row has, with each row's terms at each lag.
  static bool walks_lags(std::span<const int> keys);

  // GPU memory compute() takes at most for rows of up to `keys` keys.
  static std::uint64_t bytes(int heads, int keys, int dim, int rows, std::uint64_t strip_bytes = kGramStripBytes);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace attngeom
