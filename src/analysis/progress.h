#pragma once
// analyze's progress after each finished sequence, with the throughput and the time left, and
// within a long sequence after its layers. The library only measures it: each front end shows
// it its own way (the CLI on stderr).
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "util/error.h"

namespace attngeom {

struct ProgressUpdate {
  std::size_t done = 0, total = 0;  // sequences (those of an interrupted run included)
  int layers_done = 0, layers = 0;  // of the sequence after `done`; layers = 0 once a sequence is done
  double tokens_per_s = 0;
  double eta_s = 0;  // seconds left at this pace
};

// What a run is about to compute, told once before its first sequence.
struct RunStart {
  std::string model_type;  // config.json's
  std::string precision, device;
  std::size_t sequences = 0;     // this process's share, at the first length
  int seq_len = 0;               // the first length
  std::size_t query_rows = 0;    // captured per sequence
  std::size_t more_lengths = 0;  // a length sweep's lengths after the first
  std::size_t documents = 0;     // distinct corpus documents the sequences draw from
  std::string first_document;    // "file:line" of the first sequence's first document
};

// One line, e.g. "attngeom: llama, fp32 on cpu: 8 sequences of 256 tokens, 1 query row each\n".
std::string run_start_text(const RunStart& start);

// A warning when two or more sequences all come from one document (their rows are then far
// from independent samples); none otherwise.
std::optional<SettingMessage> one_document_warning(const RunStart& start);

// A bar redrawn in place (for a terminal), or one log line.
std::string progress_text(const ProgressUpdate& update, bool bar);

class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  // Within a sequence, an update is shown at most once per `layer_interval` after the last
  // one, so only sequences that take long (long contexts, large models on a CPU) show layers.
  Progress(std::size_t total, std::size_t seq_len, std::function<void(const ProgressUpdate&)> show,
           Clock::duration layer_interval = std::chrono::seconds(30))
      : total_(total), seq_len_(seq_len), show_(std::move(show)), layer_interval_(layer_interval) {}
  // `done` of the total are finished now.
  void sequence_done(std::size_t done);
  // `layers_done` of the `layers` of the sequence after the `done` finished ones are analysed.
  // From any thread (layers are analysed on worker threads), as sequence_done.
  void layer_done(std::size_t done, int layers_done, int layers);

 private:
  std::mutex mutex_;  // the updates' order and the times below
  std::size_t total_, seq_len_, computed_ = 0;
  std::function<void(const ProgressUpdate&)> show_;  // null: not shown
  Clock::duration layer_interval_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point sequence_start_ = start_;  // and the time of the last update shown
  Clock::time_point last_shown_ = start_;
};

}  // namespace attngeom
