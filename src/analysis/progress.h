#pragma once
// analyze's progress on stderr: a bar on a terminal, else one line per finished sequence,
// with the throughput and the time left.
#include <chrono>
#include <cstddef>

namespace attngeom {

class Progress {
 public:
  Progress(std::size_t total, std::size_t seq_len, bool bar) : total_(total), seq_len_(seq_len), bar_(bar) {}
  // `done` of the total are finished now (those of an interrupted run included).
  void sequence_done(std::size_t done);

 private:
  std::size_t total_, seq_len_, computed_ = 0;
  bool bar_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace attngeom
