#pragma once
// analyze's progress after each finished sequence, with the throughput and the time left. The
// library only measures it: each front end shows it its own way (the CLI on stderr).
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace attngeom {

struct ProgressUpdate {
  std::size_t done = 0, total = 0;  // sequences (those of an interrupted run included)
  double tokens_per_s = 0;
  double eta_s = 0;  // seconds left at this pace
};

// A bar redrawn in place (for a terminal), or one log line.
std::string progress_text(const ProgressUpdate& update, bool bar);

class Progress {
 public:
  Progress(std::size_t total, std::size_t seq_len, std::function<void(const ProgressUpdate&)> show)
      : total_(total), seq_len_(seq_len), show_(std::move(show)) {}
  // `done` of the total are finished now.
  void sequence_done(std::size_t done);

 private:
  std::size_t total_, seq_len_, computed_ = 0;
  std::function<void(const ProgressUpdate&)> show_;  // null: not shown
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace attngeom
