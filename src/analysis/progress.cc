#include "analysis/progress.h"

#include <algorithm>
#include <cstdio>

#include "util/plural.h"

namespace attngeom {

std::string progress_text(const ProgressUpdate& u, bool bar) {
  char text[256];
  if (u.layers > 0) {
    std::snprintf(text, sizeof text,
                  bar ? "\r%zu/%zu sequences, layer %d/%d of the next  ETA %.0f s   "
                      : "attngeom: sequence %zu/%zu done, %d/%d layers of the next, ETA %.0f s\n",
                  u.done, u.total, u.layers_done, u.layers, u.eta_s);
    return text;
  }
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
  const std::lock_guard lock(mutex_);
  ++computed_;
  sequence_start_ = last_shown_ = Clock::now();
  if (!show_) return;
  const double elapsed = std::chrono::duration<double>(sequence_start_ - start_).count();
  const double per_seq = elapsed / static_cast<double>(computed_);
  show_({done, total_, 0, 0, static_cast<double>(computed_ * seq_len_) / std::max(elapsed, 1e-9),
         per_seq * static_cast<double>(total_ - done)});
}

void Progress::layer_done(std::size_t done, int layers_done, int layers) {
  const std::lock_guard lock(mutex_);
  const Clock::time_point now = Clock::now();
  if (!show_ || layers_done <= 0 || layers_done >= layers || now - last_shown_ < layer_interval_) return;
  last_shown_ = now;
  const double in_sequence = std::chrono::duration<double>(now - sequence_start_).count();
  const double this_sequence = in_sequence * layers / layers_done;  // at this sequence's pace
  const double before = std::chrono::duration<double>(sequence_start_ - start_).count();
  const double per_seq = computed_ > 0 ? before / static_cast<double>(computed_) : this_sequence;
  const double later = total_ > done + 1 ? static_cast<double>(total_ - done - 1) : 0.0;
  show_({done, total_, layers_done, layers, computed_ > 0 ? static_cast<double>(computed_ * seq_len_) / before : 0.0,
         this_sequence - in_sequence + per_seq * later});
}

}  // namespace attngeom
