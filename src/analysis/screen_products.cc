#include "analysis/screen_products.h"

#include <span>

#include "ops/gemm.h"
#include "ops/pair_product_tiles.h"

namespace attngeom {
namespace {

static_assert(TileMatmul::kTile == geometry::LoadedUnits::kTile);

// One row loaded by a screen kernel of ops/, seen as geometry's LoadedUnits.
template <class Tiles>
class LoadedTiles final : public geometry::LoadedUnits {
 public:
  LoadedTiles(const TileMatmul& product, std::span<const float> units, std::size_t count)
      : tiles_(product, units, count) {}
  void tile(std::size_t i0, std::size_t j0, float* out) override { tiles_.tile(i0, j0, out); }
  double error_bound() const override { return tiles_.error_bound(); }

 private:
  Tiles tiles_;
};

template <class Tiles>
class TilePairProducts final : public geometry::PairProducts {
 public:
  explicit TilePairProducts(std::size_t dim)
      : product_(dim, Tiles::kFormat.left, Tiles::kFormat.right, Tiles::kFormat.out) {}

  std::unique_ptr<geometry::LoadedUnits> load(std::span<const float> units, std::size_t count,
                                              std::size_t dim) const override {
    check_screen_dim(product_.dim(), dim, Tiles::kFormat.name);
    return std::make_unique<LoadedTiles<Tiles>>(product_, units, count);
  }

 private:
  TileMatmul product_;
};

template <class Tiles>
std::unique_ptr<geometry::PairProducts> make_pair_products(std::size_t dim) {
  if (!Tiles::available(dim)) return nullptr;
  return std::make_unique<TilePairProducts<Tiles>>(dim);
}

}  // namespace

std::unique_ptr<geometry::PairProducts> make_int8_pair_products(std::size_t dim) {
  return make_pair_products<Int8Tiles>(dim);
}

std::unique_ptr<geometry::PairProducts> make_bf16_pair_products(std::size_t dim) {
  return make_pair_products<Bf16Tiles>(dim);
}

std::unique_ptr<geometry::PairProducts> make_screen_pair_products(std::size_t dim) {
  if (cpu_has_amx()) return make_bf16_pair_products(dim);
  return make_int8_pair_products(dim);
}

}  // namespace attngeom
