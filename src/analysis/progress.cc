#include "analysis/progress.h"

#include <algorithm>
#include <cstdio>

namespace attngeom {

std::string progress_text(const ProgressUpdate& u, bool bar) {
  char text[256];
  if (bar) {
    const int width = 30;
    const int filled = static_cast<int>(width * u.done / std::max<std::size_t>(u.total, 1));
    std::snprintf(text, sizeof text, "\r[%.*s%*s] %zu/%zu sequences  %.0f tok/s  ETA %.0f s   %s", filled,
                  "##############################", width - filled, "", u.done, u.total, u.tokens_per_s, u.eta_s,
                  u.done == u.total ? "\n" : "");
  } else {
    std::snprintf(text, sizeof text, "attngeom: sequence %zu/%zu done, %.0f tok/s, ETA %.0f s\n", u.done, u.total,
                  u.tokens_per_s, u.eta_s);
  }
  return text;
}

void Progress::sequence_done(std::size_t done) {
  ++computed_;
  if (!show_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double per_seq = elapsed / static_cast<double>(computed_);
  show_({done, total_, static_cast<double>(computed_ * seq_len_) / std::max(elapsed, 1e-9),
         per_seq * static_cast<double>(total_ - done)});
}

}  // namespace attngeom
