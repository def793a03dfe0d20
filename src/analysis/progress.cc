#include "analysis/progress.h"

#include <algorithm>
#include <cstdio>

#include "util/plural.h"

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

std::string run_start_text(const RunStart& s) {
  std::string text = "attngeom: " + s.model_type + ", " + s.precision + " on " + s.device + ": " +
                     count_of(s.sequences, "sequence") + " of " + std::to_string(s.seq_len) + " tokens, " +
                     count_of(s.query_rows, "query row") + " each";
  if (s.more_lengths > 0) text += ", then " + count_of(s.more_lengths, "more length");
  return text + "\n";
}

std::optional<SettingMessage> one_document_warning(const RunStart& s) {
  if (s.sequences < 2 || s.documents != 1) return std::nullopt;
  return SettingMessage{"all " + std::to_string(s.sequences) + " sequences come from one document (" +
                            s.first_document + "), so their rows are far from independent samples; with ",
                        setting("format"), " text each file is one document (lines reads one per line)"};
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
