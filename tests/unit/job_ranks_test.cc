// analyze split over ranks (analysis/job_ranks.h) without MPI: two ranks as two threads,
// rank 1's records handed to rank 0 through memory, must write the files of one process,
// also when resuming a run whose records were partly lost.
#include <gtest/gtest.h>
#include <omp.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "analysis/pipeline.h"
#include "analysis/record.h"
#include "temp_dir.h"
#include "util/atomic_file.h"
#include "util/file_read.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;

// What two ThreadRanks share: rank 0's word for each length, and the records on their way.
struct Board {
  std::mutex mutex;
  std::condition_variable changed;
  int lengths = 0;  // lengths rank 0 has started
  std::string inputs;
  std::vector<std::size_t> finished;
  std::deque<std::pair<std::size_t, std::string>> records;  // (sequence, record file bytes)
};

class ThreadRanks final : public JobRanks {
 public:
  ThreadRanks(Board& board, int rank, fs::path staging) : board_(board), rank_(rank), staging_(std::move(staging)) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  std::vector<std::size_t> start_length(const std::string& inputs, const std::vector<std::size_t>& finished) override {
    std::unique_lock lock(board_.mutex);
    ++lengths_;
    if (rank_ == 0) {
      board_.inputs = inputs;
      board_.finished = finished;
      board_.lengths = lengths_;
      board_.changed.notify_all();
      return finished;
    }
    board_.changed.wait(lock, [&] { return board_.lengths >= lengths_; });
    EXPECT_EQ(board_.inputs, inputs);
    return board_.finished;
  }
  const fs::path& staging_dir() const override { return staging_; }
  void send_record(std::size_t sequence, const fs::path& path) override {
    std::string bytes = read_file_bytes(path, std::size_t{1} << 30, "record");
    fs::remove(path);
    const std::lock_guard lock(board_.mutex);
    board_.records.emplace_back(sequence, std::move(bytes));
    board_.changed.notify_all();
  }
  void finish_sending() override {}
  std::size_t receive_records(const fs::path& records_dir, bool wait) override {
    std::unique_lock lock(board_.mutex);
    if (wait) board_.changed.wait(lock, [&] { return !board_.records.empty(); });
    std::size_t written = 0;
    for (; !board_.records.empty(); board_.records.pop_front(), ++written) {
      AtomicFile file(record_path(records_dir, board_.records.front().first));
      file.write_at(0, board_.records.front().second.data(), board_.records.front().second.size());
      file.commit();
    }
    return written;
  }

 private:
  Board& board_;
  int rank_;
  fs::path staging_;
  int lengths_ = 0;
};

class JobRanksTest : public TempDir {
 protected:
  AnalysisSettings settings(const fs::path& out, RunDirMode mode) const {
    AnalysisSettings s;
    s.model_dir = ATTNGEOM_TEST_ORGANISM;
    s.data = {std::string(ATTNGEOM_TEST_ORGANISM) + "/heldout.txt"};
    s.out = out;
    s.seq_len = 64;
    s.lengths = {32};
    s.num_seqs = 5;
    s.mode = mode;
    s.check_resources = false;
    return s;
  }
  // Rank 0 writes `out`; rank 1 is given another path, which it must never create.
  void run_two_ranks(const fs::path& out, RunDirMode mode) {
    Board board;
    fs::create_directories(dir_ / "staging");
    ThreadRanks rank0(board, 0, dir_ / "unused"), rank1(board, 1, dir_ / "staging");
    RunControl control0, control1;
    control0.ranks = &rank0;
    control1.ranks = &rank1;
    std::exception_ptr error1;
    std::thread other([&] {
      omp_set_num_threads(1);
      try {
        run_analysis(settings(dir_ / "rank1-out", mode), control1);
      } catch (...) {
        error1 = std::current_exception();
      }
    });
    omp_set_num_threads(1);
    const AnalysisOutcome outcome = run_analysis(settings(out, mode), control0);
    other.join();
    if (error1) std::rethrow_exception(error1);
    EXPECT_TRUE(outcome.complete);
    EXPECT_FALSE(fs::exists(dir_ / "rank1-out"));
    EXPECT_TRUE(fs::is_empty(dir_ / "staging"));
  }
  // Every file of `a` but run.json equals `b`'s, byte for byte; returns how many.
  static int expect_same_files(const fs::path& a, const fs::path& b) {
    int compared = 0;
    for (const auto& entry : fs::recursive_directory_iterator(a)) {
      if (!entry.is_regular_file() || entry.path().filename() == "run.json") continue;
      const fs::path other = b / fs::relative(entry.path(), a);
      EXPECT_EQ(read_file_bytes(entry.path(), 1 << 30, "a"), read_file_bytes(other, 1 << 30, "b")) << other;
      ++compared;
    }
    return compared;
  }
};

TEST_F(JobRanksTest, TwoRanksWriteWhatOneProcessWrites) {
  omp_set_num_threads(1);
  ASSERT_TRUE(run_analysis(settings(dir_ / "single", RunDirMode::kCreate), {}).complete);
  run_two_ranks(dir_ / "ranks", RunDirMode::kCreate);
  EXPECT_GT(expect_same_files(dir_ / "single", dir_ / "ranks"), 20);

  // Records of both ranks lost (run.json then says the run is incomplete): a resume under
  // two ranks computes just those again.
  for (const char* lost : {"records/seq-000001.safetensors", "records/seq-000002.safetensors",
                           "lengths/32/records/seq-000003.safetensors"}) {
    ASSERT_TRUE(fs::remove(dir_ / "ranks" / lost)) << lost;
  }
  run_two_ranks(dir_ / "ranks", RunDirMode::kResume);
  EXPECT_GT(expect_same_files(dir_ / "single", dir_ / "ranks"), 20);
}

}  // namespace
}  // namespace attngeom
