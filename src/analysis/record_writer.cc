#include "analysis/record_writer.h"

#include <utility>

namespace attngeom {

RecordWriter::RecordWriter(const RecordSchema& schema, std::size_t max_pending)
    : schema_(schema), max_pending_(max_pending < 1 ? 1 : max_pending), worker_([this] { work(); }) {}

RecordWriter::~RecordWriter() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void RecordWriter::write(std::filesystem::path path, const SequenceRecord& record) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return error_ || pending_.size() < max_pending_; });
  if (error_) std::rethrow_exception(error_);
  pending_.push_back({std::move(path), record});
  changed_.notify_all();
}

void RecordWriter::finish() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return error_ || (pending_.empty() && !writing_); });
  if (error_) std::rethrow_exception(error_);
}

std::size_t RecordWriter::written() {
  const std::lock_guard lock(mutex_);
  return written_;
}

void RecordWriter::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, everything written
    Pending next = std::move(pending_.front());
    pending_.pop_front();
    writing_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      write_record(next.path, schema_, next.record);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    writing_ = false;
    if (!error) ++written_;
    if (error && !error_) {
      error_ = error;
      pending_.clear();
    }
    changed_.notify_all();
  }
}

}  // namespace attngeom
