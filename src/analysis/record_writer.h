#pragma once
// Writes sequence records on a thread of its own, so that the next sequence's forward pass
// does not wait for the disk: each record is written and fsynced whole before it is renamed
// into place (util/atomic_file.h), which on a GPU takes about as long as a sequence's analysis.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include "analysis/record.h"

namespace attngeom {

class RecordWriter {
 public:
  // At most `max_pending` records wait in memory; beyond that write() waits.
  explicit RecordWriter(const RecordSchema& schema, std::size_t max_pending = 2);
  // Finishes the writes still waiting (a record analysed is kept for --resume), then stops.
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Queues a copy of `record` for `path`. Rethrows the error of an earlier write, after which
  // nothing more is written.
  void write(std::filesystem::path path, const SequenceRecord& record);
  // Returns once every queued record is on disk; rethrows the first write's error.
  void finish();
  // How many records are on disk so far.
  std::size_t written();

 private:
  void work();

  const RecordSchema& schema_;
  const std::size_t max_pending_;
  std::mutex mutex_;
  std::condition_variable changed_;
  struct Pending {
    std::filesystem::path path;
    SequenceRecord record;
  };
  std::deque<Pending> pending_;
  bool writing_ = false;
  std::size_t written_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace attngeom
