#include "ops/tile_matmul.h"

#include <string>

#include "util/error.h"

namespace attngeom {
namespace {

using dnnl::memory;

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

}  // namespace

TileMatmul::TileMatmul(std::size_t dim, memory::data_type a, memory::data_type b, memory::data_type c)
    : dim_(dim),
      engine_(dnnl::engine::kind::cpu, 0),
      a_({kTile, static_cast<memory::dim>(dim)}, a, memory::format_tag::ab),
      b_({static_cast<memory::dim>(dim), kTile}, b, memory::format_tag::ba),  // rows read as the transpose
      c_({kTile, kTile}, c, memory::format_tag::ab),
      pd_(dnnl::matmul::desc(a_, b_, c_), user_scratchpad(), engine_),
      matmul_(pd_) {}

TileMatmul::Runner::Runner(const TileMatmul& product)
    : product_(product), stream_(product.engine_), scratchpad_(product.pd_.scratchpad_desc(), product.engine_) {}

void TileMatmul::Runner::run(const void* left, const void* right, void* out) {
  const TileMatmul& p = product_;
  memory a(p.a_, p.engine_, const_cast<void*>(left));  // oneDNN takes handles as void*; it only reads them
  memory b(p.b_, p.engine_, const_cast<void*>(right));
  memory c(p.c_, p.engine_, out);
  p.matmul_.execute(stream_,
                    {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}, {DNNL_ARG_SCRATCHPAD, scratchpad_}});
  stream_.wait();
}

double screen_error_bound(double max_error, double relative, double absolute) {
  constexpr double n = 1.0 + 0x1p-22;
  const double coarse = n + max_error;  // bounds |p_k|
  const double bound = kTwoFloatRoundings + max_error * (2.0 * n + max_error) + relative * coarse * coarse + absolute;
  return bound * (1.0 + 0x1p-30);
}

void check_screen_dim(std::size_t built, std::size_t given, const char* kernel) {
  if (given != built) {
    throw InputError(std::string(kernel) + " pair products: built for d = " + std::to_string(built) + ", got " +
                     std::to_string(given));
  }
}

}  // namespace attngeom
