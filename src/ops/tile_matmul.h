#pragma once
// The oneDNN product behind the screens of pair_product_tiles.h: a [kTile, d] block of one
// row's vectors times the transpose of another block, [kTile, kTile] out. One primitive serves
// every row and thread; each loaded row runs it through its own Runner.
#include <cstddef>
#include <oneapi/dnnl/dnnl.hpp>

namespace attngeom {

class TileMatmul {
 public:
  static constexpr std::size_t kTile = 256;
  // a: the left block's type, b: the right block's, c: the tile's.
  TileMatmul(std::size_t dim, dnnl::memory::data_type a, dnnl::memory::data_type b, dnnl::memory::data_type c);

  // A stream and a scratchpad of one's own: rows are analysed on many threads at once, and
  // neither oneDNN's streams nor its shared scratchpad may be used concurrently.
  class Runner {
   public:
    explicit Runner(const TileMatmul& product);
    // out[kTile, kTile] = left[kTile, d] right[kTile, d]^T (rows of `dim` elements each).
    void run(const void* left, const void* right, void* out);

   private:
    const TileMatmul& product_;
    dnnl::stream stream_;
    dnnl::memory scratchpad_;
  };

  std::size_t dim() const { return dim_; }

 private:
  std::size_t dim_;
  dnnl::engine engine_;
  dnnl::memory::desc a_, b_, c_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul matmul_;
};

// Relative error of two float roundings in a row: (1 + u)^2 - 1 = 2u + u^2, u = 2^-24.
inline constexpr double kTwoFloatRoundings = 0x1p-23 + 0x1p-48;

// Bound on |computed <p_i, p_l> - <u_i, u_l>| for the exact unit vectors u of a row, given
// p_k, the coarse copies the kernel multiplies, within max_error of the float units u_k
// (|u_k - p_k| <= max_error), and a computed product within relative |p_i| |p_l| + absolute of
// <p_i, p_l>. With the float units |u_k| <= n = 1 + 2^-22:
//   |<u_i, u_l> - <p_i, p_l>| = |<e_i, u_l> + <p_i, e_l>| <= |e_i| n + (n + |e_i|) |e_l|;
// rounding the units to float moved <u_i, u_l> by kTwoFloatRoundings at most (as in the fp32
// screen).
// The |e_k| are double sums, good to far better than the 2^-30 margin.
double screen_error_bound(double max_error, double relative, double absolute);

// Refuses units of another d than the kernel was built for.
void check_screen_dim(std::size_t built, std::size_t given, const char* kernel);

}  // namespace attngeom
