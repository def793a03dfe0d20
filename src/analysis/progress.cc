#include "analysis/progress.h"

#include <algorithm>
#include <cstdio>

namespace attngeom {

void Progress::sequence_done(std::size_t done) {
  ++computed_;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double per_seq = elapsed / static_cast<double>(computed_);
  const double tokens_per_s = static_cast<double>(computed_ * seq_len_) / std::max(elapsed, 1e-9);
  const double eta = per_seq * static_cast<double>(total_ - done);
  if (bar_) {
    const int width = 30;
    const int filled = static_cast<int>(width * done / std::max<std::size_t>(total_, 1));
    std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu sequences  %.0f tok/s  ETA %.0f s   ", filled,
                 "##############################", width - filled, "", done, total_, tokens_per_s, eta);
    if (done == total_) std::fprintf(stderr, "\n");
  } else {
    std::fprintf(stderr, "attngeom: sequence %zu/%zu done, %.0f tok/s, ETA %.0f s\n", done, total_, tokens_per_s, eta);
  }
}

}  // namespace attngeom
